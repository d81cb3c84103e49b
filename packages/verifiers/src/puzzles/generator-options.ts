import { createRng, type Rng, validateInteger, validateOptions } from '@rlvr/core';

/** Options every puzzle generator takes: a seed (or a generator to draw from) and a difficulty. */
export type PuzzleGeneratorOptions = { seed: number | string | Rng; difficulty?: number };

/**
 * Validates a generator's options: `difficulty` an integer in [1, 5] (default `defaultDifficulty`),
 * `seed` a number/string seed or an existing {@link Rng}. @internal
 */
export function readGeneratorOptions(
  options: unknown,
  functionName: string,
  defaultDifficulty: number,
): { difficulty: number; rng: Rng } {
  const raw = validateOptions<PuzzleGeneratorOptions>(options ?? null, {
    parameter: 'options',
    functionName,
    known: ['seed', 'difficulty'],
  });
  const difficulty =
    raw.difficulty === undefined
      ? defaultDifficulty
      : validateInteger(raw.difficulty, {
          parameter: 'options.difficulty',
          functionName,
          min: 1,
          max: 5,
        });
  const seed = raw.seed;
  const rng =
    typeof seed === 'object' && seed !== null && 'nextInt' in seed
      ? seed
      : createRng(seed as number | string);
  return { difficulty, rng };
}
