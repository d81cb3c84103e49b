import { ErrorCode } from '../errors/error-codes.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import type { ArgumentContext } from './validate.js';

/**
 * Names other systems (TRL, verl, OpenRLHF, Hugging Face) use for a concept, mapped to ours. Used
 * only to suggest the right key in an error: an alias is never accepted silently.
 */
const COMMON_ALIASES: Readonly<Record<string, readonly string[]>> = {
  klcoef: ['beta', 'klCoefficient'],
  initklcoef: ['beta', 'klCoefficient'],
  klcoefficient: ['beta', 'klCoefficient'],
  klbeta: ['beta'],
  beta: ['beta', 'klCoefficient'],
  learningrate: ['learningRate', 'schedule'],
  lr: ['learningRate', 'schedule'],
  numgenerations: ['groupSize', 'n'],
  nsamplesperprompt: ['groupSize', 'n'],
  maxcompletionlength: ['maxNewTokens'],
  maxtokens: ['maxNewTokens'],
  maxlength: ['maxNewTokens', 'maxLength'],
  steps: ['maxSteps'],
  numtrainsteps: ['maxSteps'],
  savesteps: ['saveEvery'],
  savetotallimit: ['keepLast'],
  epsilon: ['epsilonLow'],
  cliprange: ['epsilonLow'],
  epsilonhigh: ['epsilonHigh'],
  losstype: ['lossAggregation'],
  lossaggmode: ['lossAggregation'],
  numiterations: ['numIterations'],
  ppoepochs: ['numIterations'],
  maxgradnorm: ['maxGradNorm'],
  gradclip: ['maxGradNorm'],
  weightdecay: ['weightDecay', 'optimizer'],
  warmupsteps: ['warmupSteps', 'schedule'],
  lrschedulertype: ['schedule'],
  entropycoeff: ['entropyCoefficient'],
  entropycoef: ['entropyCoefficient'],
  lossmode: ['lossMode'],
  taupos: ['sapoTemperaturePos'],
  tauneg: ['sapoTemperatureNeg'],
  outputdir: ['outputDir'],
  seed: ['seed'],
  numworkers: ['workers'],
  tolerance: ['tolerance'],
};

function normalize(key: string): string {
  return key.toLowerCase().replace(/[_\-\s.]/g, '');
}

/** Damerau–Levenshtein (optimal string alignment) distance. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        d[(i - 1) * cols + j]! + 1,
        d[i * cols + j - 1]! + 1,
        d[(i - 1) * cols + j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, d[(i - 2) * cols + j - 2]! + 1);
      }
      d[i * cols + j] = best;
    }
  }
  return d[rows * cols - 1]!;
}

/**
 * The known option closest to `key`: an explicit alias (`aliases`, then other systems' names such
 * as TRL's `kl_coef` → `beta`), the same name in another case style (`max_grad_norm` →
 * `maxGradNorm`), or the nearest name by edit distance (`tolerence` → `tolerance`, `worker` →
 * `workers`). `undefined` when nothing is close.
 */
export function closestOption(
  key: string,
  known: readonly string[],
  aliases?: Readonly<Record<string, string>>,
): string | undefined {
  if (aliases) {
    const direct = aliases[key] ?? aliases[normalize(key)];
    if (direct !== undefined) return direct;
    for (const [alias, target] of Object.entries(aliases)) {
      if (normalize(alias) === normalize(key)) return target;
    }
  }
  const wanted = normalize(key);
  const same = known.find((name) => normalize(name) === wanted);
  if (same !== undefined) return same;
  const common = COMMON_ALIASES[wanted]?.find((name) => known.includes(name));
  if (common !== undefined) return common;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of known) {
    const distance = editDistance(wanted, normalize(name));
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  if (best !== undefined && bestDistance <= limit) return best;
  // A known name that contains the key or is contained in it (`lr` is too short for this).
  if (wanted.length >= 4) {
    const partial = known.find(
      (name) => normalize(name).includes(wanted) || wanted.includes(normalize(name)),
    );
    if (partial !== undefined) return partial;
  }
  return undefined;
}

/** What {@link validateOptions} checks besides "a plain object". */
export type OptionsContext = ArgumentContext & {
  /** Every key the options object may have; any other key throws `UNKNOWN_OPTION`. */
  known?: readonly string[];
  /** Wrong names mapped to the right one, for the "did you mean" hint (never accepted). */
  aliases?: Readonly<Record<string, string>>;
};

/**
 * Throws `UNKNOWN_OPTION` when `value` has a key outside `known`, naming the key and the closest
 * valid one: `Invalid argument for parameter 'config.kl_coef' of createGrpoTrainer(): expected a
 * known option of 'config' (did you mean 'beta'?), got 0.5`. Keys whose value is `undefined` are
 * checked too (a misspelled key is wrong whatever its value).
 */
export function assertKnownKeys(
  value: object,
  context: ArgumentContext & {
    known: readonly string[];
    aliases?: Readonly<Record<string, string>>;
  },
): void {
  for (const key of Object.keys(value)) {
    if (context.known.includes(key)) continue;
    const suggestion = closestOption(key, context.known, context.aliases);
    const hint =
      suggestion === undefined
        ? `one of ${context.known.map((name) => `'${name}'`).join(', ')}`
        : `did you mean '${suggestion}'?`;
    throw new InvalidArgumentError({
      parameter: context.parameter === '' ? key : `${context.parameter}.${key}`,
      ...(context.functionName === undefined ? {} : { functionName: context.functionName }),
      value: (value as Record<string, unknown>)[key],
      expected: `a known option of '${context.parameter || 'options'}' (${hint})`,
      code: ErrorCode.UNKNOWN_OPTION,
    });
  }
}

/**
 * Checks that `value` is a plain object (or undefined, returning `{}`) and, with `known`, that it
 * has no other keys (see {@link assertKnownKeys}).
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for a non-object; `UNKNOWN_OPTION` for an
 * unknown key.
 */
export function validateOptions<T extends object>(
  value: unknown,
  context: OptionsContext,
): Partial<T> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const { known: _known, aliases: _aliases, ...rest } = context;
    throw new InvalidArgumentError({ ...rest, value, expected: 'an options object' });
  }
  if (context.known !== undefined) {
    assertKnownKeys(value, {
      parameter: context.parameter,
      ...(context.functionName === undefined ? {} : { functionName: context.functionName }),
      known: context.known,
      ...(context.aliases === undefined ? {} : { aliases: context.aliases }),
    });
  }
  return value as Partial<T>;
}

/**
 * Throws `INEFFECTIVE_OPTION`: an option was set that has no effect in this combination, e.g.
 * `rejectIneffective({ parameter: 'config.keepLast', value: 3, because: 'config.outputDir is not
 * set (no checkpoints are written)' })`.
 */
export function rejectIneffective(options: {
  parameter: string;
  value: unknown;
  because: string;
  functionName?: string;
}): never {
  throw new InvalidArgumentError({
    parameter: options.parameter,
    ...(options.functionName === undefined ? {} : { functionName: options.functionName }),
    value: options.value,
    expected: `no value, since it has no effect: ${options.because}`,
    code: ErrorCode.INEFFECTIVE_OPTION,
  });
}
