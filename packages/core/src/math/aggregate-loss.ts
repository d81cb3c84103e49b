import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import {
  validateNumber,
  validateOneOf,
  validateOptions,
  validateRagged,
} from '../validation/validate.js';

/**
 * How per-token losses become one scalar (verl's `loss_agg_mode` names):
 * - `seq-mean-token-mean` (original GRPO): mean over sequences of each sequence's token mean,
 * - `token-mean` (DAPO): sum over all tokens / number of tokens in the whole accumulated batch,
 * - `seq-mean-token-sum`: mean over sequences of each sequence's token sum,
 * - `seq-mean-token-sum-norm` (Dr. GRPO): sum over all tokens / (sequences × a constant normalizer,
 *   e.g. `maxNewTokens`), so neither length nor group std biases the gradient.
 */
export type LossAggregation =
  | 'seq-mean-token-mean'
  | 'token-mean'
  | 'seq-mean-token-sum'
  | 'seq-mean-token-sum-norm';

/** Every {@link LossAggregation} mode. */
export const LOSS_AGGREGATIONS: readonly LossAggregation[] = [
  'seq-mean-token-mean',
  'token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
];

/**
 * Options of {@link aggregateLoss}. With gradient accumulation, pass the *global* counts of the
 * whole accumulated batch so the sum of micro-batch losses equals the full-batch loss.
 */
export type AggregateLossOptions = {
  /** `token-mean`: the denominator; default Σ mask of this call. */
  tokenCount?: number;
  /** `seq-*` modes: the number of sequences; default: sequences with at least one unmasked token. */
  sequenceCount?: number;
  /** `seq-mean-token-sum-norm`: the constant per-sequence normalizer (e.g. maxNewTokens). Required. */
  normalizer?: number;
};

const FN = 'aggregateLoss';

/**
 * Per-token weights w such that the aggregated loss is Σ w_t · loss_t (and its gradient is
 * w_t · dloss_t). A fully masked batch gives all-zero weights (a loss of 0, never NaN).
 *
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError}
 */
export function aggregationWeights(
  mask: readonly ArrayLike<number>[],
  mode: LossAggregation,
  options?: AggregateLossOptions,
): number[][] {
  return aggregationWeightsFor('aggregationWeights', mask, mode, options);
}

function aggregationWeightsFor(
  functionName: string,
  mask: readonly ArrayLike<number>[],
  mode: LossAggregation,
  options: AggregateLossOptions | undefined,
): number[][] {
  validateOneOf(mode, LOSS_AGGREGATIONS, { parameter: 'mode', functionName });
  validateRagged(mask, { parameter: 'mask', functionName });
  mask.forEach((row, sequence) => {
    for (let index = 0; index < row.length; index++) {
      if (row[index]! < 0) {
        throw new InvalidArgumentError({
          parameter: `mask[${sequence}][${index}]`,
          functionName,
          value: row[index],
          expected: 'a non-negative weight (1 = token counts, 0 = masked)',
        });
      }
    }
  });
  const raw = validateOptions<AggregateLossOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['tokenCount', 'sequenceCount', 'normalizer'],
  });
  const rowSums = mask.map((row) => {
    let sum = 0;
    for (let index = 0; index < row.length; index++) sum += row[index]!;
    return sum;
  });
  const activeSequences = rowSums.filter((sum) => sum > 0).length;
  const sequenceCount =
    raw.sequenceCount === undefined
      ? activeSequences
      : validateNumber(raw.sequenceCount, {
          parameter: 'options.sequenceCount',
          functionName,
          min: 0,
          exclusiveMin: true,
        });
  const totalTokens = rowSums.reduce((a, b) => a + b, 0);
  const tokenCount =
    raw.tokenCount === undefined
      ? totalTokens
      : validateNumber(raw.tokenCount, {
          parameter: 'options.tokenCount',
          functionName,
          min: 0,
          exclusiveMin: true,
        });
  let normalizer = 1;
  if (mode === 'seq-mean-token-sum-norm') {
    if (raw.normalizer === undefined) {
      throw new InvalidArgumentError({
        parameter: 'options.normalizer',
        functionName,
        value: undefined,
        expected: "a positive constant (e.g. maxNewTokens) for 'seq-mean-token-sum-norm'",
      });
    }
    normalizer = validateNumber(raw.normalizer, {
      parameter: 'options.normalizer',
      functionName,
      min: 0,
      exclusiveMin: true,
    });
  }
  return mask.map((row, sequence) => {
    const weights = new Array<number>(row.length).fill(0);
    const rowSum = rowSums[sequence]!;
    if (rowSum <= 0) return weights;
    for (let index = 0; index < row.length; index++) {
      const m = row[index]!;
      if (m === 0) continue;
      switch (mode) {
        case 'token-mean':
          weights[index] = tokenCount > 0 ? m / tokenCount : 0;
          break;
        case 'seq-mean-token-mean':
          weights[index] = sequenceCount > 0 ? m / rowSum / sequenceCount : 0;
          break;
        case 'seq-mean-token-sum':
          weights[index] = sequenceCount > 0 ? m / sequenceCount : 0;
          break;
        case 'seq-mean-token-sum-norm':
          weights[index] = sequenceCount > 0 ? m / (sequenceCount * normalizer) : 0;
          break;
      }
    }
    return weights;
  });
}

/**
 * Aggregates a ragged batch of per-token losses (one array per sequence) into one scalar.
 * `mask` has the same shape (1 = token counts, 0 = masked); `null`/`undefined` means all ones.
 *
 * @example
 * ```ts
 * const perToken = [[1, 2, 3], [4]];
 * aggregateLoss(perToken, null, 'seq-mean-token-mean'); // ((1+2+3)/3 + 4/1) / 2 = 3
 * aggregateLoss(perToken, null, 'token-mean');          // (1+2+3+4) / 4 = 2.5
 * aggregateLoss(perToken, null, 'seq-mean-token-sum-norm', { normalizer: 4 }); // 10 / (2·4) = 1.25
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for an unknown mode or a missing normalizer.
 * @throws {ShapeMismatchError} `SHAPE_MISMATCH` when mask and losses differ in shape.
 * @throws {NonFiniteError} `NON_FINITE` for NaN or infinite losses.
 */
export function aggregateLoss(
  perToken: readonly ArrayLike<number>[],
  mask: readonly ArrayLike<number>[] | null | undefined,
  mode: LossAggregation,
  options?: AggregateLossOptions,
): number {
  validateRagged(perToken, { parameter: 'perToken', functionName: FN });
  const effectiveMask = mask ?? perToken.map((row) => new Array<number>(row.length).fill(1));
  validateRagged(effectiveMask, {
    parameter: 'mask',
    functionName: FN,
    shapeOf: perToken,
    shapeName: 'perToken',
  });
  const weights = aggregationWeightsFor(FN, effectiveMask, mode, options);
  let total = 0;
  perToken.forEach((row, sequence) => {
    const rowWeights = weights[sequence]!;
    for (let index = 0; index < row.length; index++) {
      const weight = rowWeights[index]!;
      if (weight !== 0) total += weight * row[index]!;
    }
  });
  return total;
}
