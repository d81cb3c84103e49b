import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { assertKnownKeys } from '../validation/options.js';
import { validateNumber, validateRagged } from '../validation/validate.js';

/** Input of {@link highEntropyMask}. */
export type HighEntropyMaskInput = {
  /** Per-token entropies of the policy (nats), one row per completion. */
  entropies: readonly ArrayLike<number>[];
  /** Tokens that take part (> 0); default all. Masked tokens are never selected. */
  mask?: readonly ArrayLike<number>[];
  /**
   * ρ ∈ [0, 1] (TRL `top_entropy_quantile`, "Beyond the 80/20 Rule": 0.2): keep the tokens whose
   * entropy is at least the (1 − ρ)-quantile of the unmasked tokens' entropies. 1 keeps every
   * token; 0 keeps only the tokens at the maximum.
   */
  quantile: number;
};

/** Result of {@link highEntropyMask}. */
export type HighEntropyMaskResult = {
  /** 1 where the token is selected, 0 elsewhere (and wherever `mask` is 0). */
  mask: number[][];
  /** The entropy threshold (the (1 − ρ)-quantile); +Infinity when no token is unmasked. */
  threshold: number;
  /** Selected tokens / unmasked tokens (0 when none is unmasked). */
  keptFraction: number;
};

const FN = 'highEntropyMask';

/**
 * The quantile `q` of `values` with linear interpolation between the two nearest order
 * statistics (`torch.quantile`'s default, numpy's `linear`). `values` is sorted here.
 * @internal
 */
export function linearQuantile(values: number[], q: number): number {
  values.sort((a, b) => a - b);
  const position = q * (values.length - 1);
  const below = Math.floor(position);
  const above = Math.min(below + 1, values.length - 1);
  const fraction = position - below;
  return values[below]! + fraction * (values[above]! - values[below]!);
}

/**
 * The high-entropy token selection of "Beyond the 80/20 Rule" (TRL `top_entropy_quantile`, its
 * `get_high_entropy_mask`): the policy gradient only on the top-ρ entropy ("forking") tokens of a
 * batch. The threshold is the (1 − ρ)-quantile (linear interpolation, as `torch.quantile`) of the
 * unmasked tokens' entropies; a token is kept when its entropy is ≥ the threshold. Pass the
 * result to `policyLoss` as `entropyMask`; compute it over the whole optimizer batch so that the
 * selection does not depend on how the batch is split into micro-batches.
 *
 * @example
 * ```ts
 * highEntropyMask({ entropies: [[0.1, 2.0, 0.3, 1.5]], quantile: 0.5 });
 * // threshold = 0.9 (the median of 0.1, 0.3, 1.5, 2.0): mask [[0, 1, 0, 1]], keptFraction 0.5
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} naming the
 * parameter.
 */
export function highEntropyMask(input: HighEntropyMaskInput): HighEntropyMaskResult {
  if (input === null || typeof input !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'input',
      functionName: FN,
      value: input,
      expected: 'an input object { entropies, mask?, quantile }',
    });
  }
  assertKnownKeys(input, {
    parameter: '',
    functionName: FN,
    known: ['entropies', 'mask', 'quantile'],
  });
  const entropies = validateRagged(input.entropies, { parameter: 'entropies', functionName: FN });
  const mask =
    input.mask === undefined
      ? undefined
      : validateRagged(input.mask, {
          parameter: 'mask',
          functionName: FN,
          shapeOf: entropies,
          shapeName: 'entropies',
        });
  const quantile = validateNumber(input.quantile, {
    parameter: 'quantile',
    functionName: FN,
    min: 0,
    max: 1,
  });
  const counted = (sequence: number, index: number) =>
    mask === undefined || mask[sequence]![index]! > 0;
  const values: number[] = [];
  entropies.forEach((row, sequence) => {
    for (let index = 0; index < row.length; index++) {
      if (counted(sequence, index)) values.push(row[index]!);
    }
  });
  const total = values.length;
  const threshold = total === 0 ? Infinity : linearQuantile(values, 1 - quantile);
  let kept = 0;
  const selected = entropies.map((row, sequence) =>
    Array.from(row, (entropy, index) => {
      const keep = counted(sequence, index) && entropy >= threshold;
      if (keep) kept += 1;
      return keep ? 1 : 0;
    }),
  );
  return { mask: selected, threshold, keptFraction: total === 0 ? 0 : kept / total };
}
