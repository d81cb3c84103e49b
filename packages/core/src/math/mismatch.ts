import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { assertKnownKeys } from '../validation/options.js';
import { validateNumber, validateOneOf, validateRagged } from '../validation/validate.js';

/**
 * How the rollout↔trainer mismatch is corrected (TRL `vllm_importance_sampling_mode`):
 * - `token-truncate` (TIS): per-token weight min(r_t, cap),
 * - `token-mask` (MIS): tokens with r_t outside [lowerThreshold, cap] are masked out,
 * - `sequence-truncate`: per-sequence weight min(Π_t r_t, cap) on every token,
 * - `sequence-mask`: sequences with Π_t r_t outside [lowerThreshold, cap] are masked out,
 * where r_t = exp(trainerLogp_t − behaviourLogp_t).
 */
export type MismatchMode = 'token-truncate' | 'token-mask' | 'sequence-truncate' | 'sequence-mask';

/** Input of {@link mismatchCorrection}. */
export type MismatchCorrectionInput = {
  /** Logprobs of the sampled tokens recomputed by the trainer (π_old in the trainer's engine). */
  trainerLogprobs: readonly ArrayLike<number>[];
  /** Logprobs reported by the rollout engine when sampling. */
  behaviourLogprobs: readonly ArrayLike<number>[];
  /** Default all ones. */
  mask?: readonly ArrayLike<number>[];
  /** Default `token-truncate` ({@link MISMATCH_DEFAULTS}). */
  mode?: MismatchMode;
  /** Upper bound C on the ratio (TRL default 3). */
  cap?: number;
  /** Mask modes only: ratios below this are masked too. Default 0 (no lower bound). */
  lowerThreshold?: number;
};

/**
 * What {@link mismatchCorrection} uses for an omitted `mode` (`token-truncate`, TIS), `cap` (3,
 * TRL's) and `lowerThreshold` (0, no lower bound). Layers that fill or show these settings (the
 * trainer's option checks, `effectiveGrpoConfig`) read them from here.
 */
export const MISMATCH_DEFAULTS = Object.freeze({
  mode: 'token-truncate',
  cap: 3,
  lowerThreshold: 0,
} as const satisfies Required<Pick<MismatchCorrectionInput, 'mode' | 'cap' | 'lowerThreshold'>>);

/** Metrics of the mismatch, over unmasked tokens of the input mask. */
export type MismatchMetrics = {
  meanAbsLogprobDiff: number;
  maxAbsLogprobDiff: number;
  /** Min / mean / max of the raw ratio (token ratios, or sequence ratios in sequence modes). */
  isRatioMin: number;
  isRatioMean: number;
  isRatioMax: number;
  /** Fraction of tokens whose weight was truncated at the cap. */
  truncatedFraction: number;
  /** Fraction of tokens masked out by the correction. */
  maskedFraction: number;
};

/** Result of {@link mismatchCorrection}. */
export type MismatchCorrectionResult = {
  /** Per-token importance weights to multiply the policy-gradient term with (0 where masked). */
  weights: number[][];
  /** The input mask with the rejected tokens set to 0. */
  mask: number[][];
  metrics: MismatchMetrics;
};

const FN = 'mismatchCorrection';
const MODES: readonly MismatchMode[] = [
  'token-truncate',
  'token-mask',
  'sequence-truncate',
  'sequence-mask',
];

/**
 * Importance-sampling correction for the gap between the rollout engine's logprobs and the
 * trainer's (different kernels, precision, or stale weights), as TRL/verl/OpenRLHF do, with the
 * metrics to watch it.
 *
 * @example
 * ```ts
 * const { weights, metrics } = mismatchCorrection({
 *   trainerLogprobs: [[-1.0, -2.0]], behaviourLogprobs: [[-1.1, -0.5]], mode: 'token-truncate', cap: 2,
 * });
 * // weights[0] = [exp(0.1), exp(-1.5)]; metrics.maxAbsLogprobDiff = 1.5
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError}
 */
export function mismatchCorrection(input: MismatchCorrectionInput): MismatchCorrectionResult {
  if (input === null || typeof input !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'input',
      functionName: FN,
      value: input,
      expected: 'an input object',
    });
  }
  assertKnownKeys(input, {
    parameter: '',
    functionName: FN,
    known: ['trainerLogprobs', 'behaviourLogprobs', 'mask', 'mode', 'cap', 'lowerThreshold'],
  });
  const trainer = validateRagged(input.trainerLogprobs, {
    parameter: 'trainerLogprobs',
    functionName: FN,
  });
  const shape = { shapeOf: trainer, shapeName: 'trainerLogprobs', functionName: FN };
  const behaviour = validateRagged(input.behaviourLogprobs, {
    parameter: 'behaviourLogprobs',
    ...shape,
  });
  const inputMask =
    input.mask === undefined
      ? trainer.map((row) => new Array<number>(row.length).fill(1))
      : validateRagged(input.mask, { parameter: 'mask', ...shape });
  const mode = validateOneOf(input.mode ?? MISMATCH_DEFAULTS.mode, MODES, {
    parameter: 'mode',
    functionName: FN,
  });
  const cap = validateNumber(input.cap ?? MISMATCH_DEFAULTS.cap, {
    parameter: 'cap',
    functionName: FN,
    min: 1,
  });
  const lowerThreshold = validateNumber(input.lowerThreshold ?? MISMATCH_DEFAULTS.lowerThreshold, {
    parameter: 'lowerThreshold',
    functionName: FN,
    min: 0,
    max: 1,
  });
  const isMask = mode === 'token-mask' || mode === 'sequence-mask';
  const isSequence = mode === 'sequence-truncate' || mode === 'sequence-mask';

  let tokens = 0;
  let absSum = 0;
  let absMax = 0;
  let ratioSum = 0;
  let ratioCount = 0;
  let ratioMin = Infinity;
  let ratioMax = -Infinity;
  let truncated = 0;
  let masked = 0;
  const weights: number[][] = [];
  const mask: number[][] = [];

  const noteRatio = (ratio: number, count: number) => {
    ratioSum += ratio * count;
    ratioCount += count;
    ratioMin = Math.min(ratioMin, ratio);
    ratioMax = Math.max(ratioMax, ratio);
  };

  trainer.forEach((row, sequence) => {
    const rowMask = inputMask[sequence]!;
    const rowBehaviour = behaviour[sequence]!;
    const length = row.length;
    const weightRow = new Array<number>(length).fill(0);
    const maskRow = Array.from({ length }, (_, index) => rowMask[index]!);
    let logRatioSum = 0;
    let rowTokens = 0;
    for (let index = 0; index < length; index++) {
      const m = rowMask[index]!;
      if (m === 0) continue;
      const difference = row[index]! - rowBehaviour[index]!;
      absSum += m * Math.abs(difference);
      absMax = Math.max(absMax, Math.abs(difference));
      tokens += m;
      rowTokens += m;
      logRatioSum += difference;
    }
    if (isSequence) {
      if (rowTokens === 0) {
        weights.push(weightRow);
        mask.push(maskRow);
        return;
      }
      const ratio = Math.exp(Math.min(Math.max(logRatioSum, -20), 20));
      noteRatio(ratio, rowTokens);
      const reject = isMask && (ratio > cap || ratio < lowerThreshold);
      const weight = isMask ? (reject ? 0 : ratio) : Math.min(ratio, cap);
      for (let index = 0; index < length; index++) {
        const m = rowMask[index]!;
        if (m === 0) continue;
        weightRow[index] = weight;
        if (reject) maskRow[index] = 0;
      }
      if (reject) masked += rowTokens;
      if (!isMask && ratio > cap) truncated += rowTokens;
    } else {
      for (let index = 0; index < length; index++) {
        const m = rowMask[index]!;
        if (m === 0) continue;
        const ratio = Math.exp(Math.min(Math.max(row[index]! - rowBehaviour[index]!, -20), 20));
        noteRatio(ratio, m);
        if (isMask) {
          if (ratio > cap || ratio < lowerThreshold) {
            maskRow[index] = 0;
            masked += m;
          } else {
            weightRow[index] = ratio;
          }
        } else {
          weightRow[index] = Math.min(ratio, cap);
          if (ratio > cap) truncated += m;
        }
      }
    }
    weights.push(weightRow);
    mask.push(maskRow);
  });

  const fraction = (value: number) => (tokens > 0 ? value / tokens : 0);
  return {
    weights,
    mask,
    metrics: {
      meanAbsLogprobDiff: fraction(absSum),
      maxAbsLogprobDiff: absMax,
      isRatioMin: ratioCount > 0 ? ratioMin : 1,
      isRatioMean: ratioCount > 0 ? ratioSum / ratioCount : 1,
      isRatioMax: ratioCount > 0 ? ratioMax : 1,
      truncatedFraction: fraction(truncated),
      maskedFraction: fraction(masked),
    },
  };
}
