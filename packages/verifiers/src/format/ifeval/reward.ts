import { type RewardFunction, type RewardInput, validateOneOf, validateOptions } from '@rlvr/core';
import { prepareInstructions, readCheckOptions, runPrepared } from './evaluate.js';
import type { IfevalSemantics } from './kwargs.js';
import { loadLanguageDetector } from './language.js';
import type { PreparedInstruction } from './registry.js';

/** Options of {@link ifevalReward}. */
export type IfevalRewardOptions = {
  /** `'instruction'` (default): share of instructions followed; `'prompt'`: 1 only if all are. */
  level?: 'instruction' | 'prompt';
  /** Judge with IFEval's loose variants (default false: strict). */
  loose?: boolean;
  semantics?: IfevalSemantics;
};

function instructionsOf(input: RewardInput): unknown[] | null {
  const source = (input.metadata ?? {}) as Record<string, unknown>;
  const answer = input.answer as Record<string, unknown> | unknown[] | undefined;
  const row = Array.isArray(source.instruction_id_list)
    ? source
    : answer !== undefined && !Array.isArray(answer) && Array.isArray(answer?.instruction_id_list)
      ? answer
      : null;
  if (row) {
    const ids = row.instruction_id_list as unknown[];
    const kwargs = Array.isArray(row.kwargs) ? row.kwargs : [];
    return ids.map((id, index) => ({ id, kwargs: kwargs[index] ?? null }));
  }
  if (Array.isArray(source.ifeval)) return source.ifeval;
  if (Array.isArray(answer)) return answer;
  return null;
}

/**
 * IFEval as a reward. The instructions come from the sample: an IFEval row in `metadata`
 * (`instruction_id_list` + `kwargs`) or in `answer`, or `metadata.ifeval` / `answer` as
 * `{ id, kwargs }[]`. A sample without instructions, or with malformed ones, gets `null`.
 *
 * @example
 * ```ts
 * const reward = ifevalReward({ level: 'prompt' });
 * await reward({ prompt: 'p', completion: 'no commas here',
 *   metadata: { instruction_id_list: ['punctuation:no_comma'], kwargs: [{}] } }); // 1
 * ```
 */
export function ifevalReward(options: IfevalRewardOptions = {}): RewardFunction {
  const given = validateOptions<IfevalRewardOptions>(options, {
    parameter: 'options',
    functionName: 'ifevalReward',
    known: ['level', 'loose', 'semantics'],
  });
  const level =
    given.level === undefined
      ? 'instruction'
      : validateOneOf(given.level, ['instruction', 'prompt'], {
          parameter: 'options.level',
          functionName: 'ifevalReward',
        });
  const loose = given.loose === true;
  const context = readCheckOptions(
    given.semantics === undefined ? {} : { semantics: given.semantics },
    'ifevalReward',
  );
  return async (input) => {
    const list = instructionsOf(input);
    if (!list || list.length === 0) return null;
    let prepared: PreparedInstruction[];
    try {
      prepared = prepareInstructions(list);
    } catch {
      return null; // malformed dataset instructions: not applicable
    }
    const detector = prepared.some((item) => item.language)
      ? await loadLanguageDetector()
      : undefined;
    const result = runPrepared(input.completion, prepared, { ...context, detector });
    const verdicts = result.results.map((item) => (loose ? item.loose : item.strict));
    if (level === 'prompt') return verdicts.every(Boolean) ? 1 : 0;
    return verdicts.filter(Boolean).length / verdicts.length;
  };
}
