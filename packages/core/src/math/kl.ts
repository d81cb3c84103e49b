import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { isNumericArrayLike, validateFiniteArray, validateOneOf } from '../validation/validate.js';

/**
 * Per-token estimators of KL(π_θ ‖ π_ref) from the two logprobs of the sampled token
 * (Schulman, "Approximating KL divergence"), with verl's names in brackets:
 * - `k1` [`kl`]: logp − refLogp (unbiased, high variance, can be negative),
 * - `k2` [`mse`]: ½ (logp − refLogp)²,
 * - `k3` [`low_var_kl`]: exp(refLogp − logp) − (refLogp − logp) − 1 (unbiased, always ≥ 0),
 *   with verl's clamping: the log-ratio to [−20, 20] and the value to [−10, 10],
 * - `abs`: |logp − refLogp|.
 */
export type KlEstimator = 'k1' | 'k2' | 'k3' | 'abs';

const FN = 'klPenalty';
const ESTIMATORS: readonly KlEstimator[] = ['k1', 'k2', 'k3', 'abs'];

/** KL estimate for one token. Callers validate. @internal */
export function klValue(logprob: number, refLogprob: number, estimator: KlEstimator): number {
  const difference = logprob - refLogprob;
  switch (estimator) {
    case 'k1':
      return difference;
    case 'k2':
      return 0.5 * difference * difference;
    case 'abs':
      return Math.abs(difference);
    case 'k3': {
      const logRatio = Math.min(Math.max(-difference, -20), 20);
      // expm1 avoids the cancellation of exp(x) − x − 1 near 0; the estimator is ≥ 0 exactly.
      const value = Math.max(Math.expm1(logRatio) - logRatio, 0);
      return Math.min(value, 10);
    }
  }
}

/** d klValue / d logprob for one token (0 where a clamp is active). @internal */
export function klGradient(logprob: number, refLogprob: number, estimator: KlEstimator): number {
  const difference = logprob - refLogprob;
  switch (estimator) {
    case 'k1':
      return 1;
    case 'k2':
      return difference;
    case 'abs':
      return Math.sign(difference);
    case 'k3': {
      const logRatio = -difference;
      if (logRatio < -20 || logRatio > 20) return 0;
      if (Math.expm1(logRatio) - logRatio > 10) return 0;
      return -Math.expm1(logRatio);
    }
  }
}

/**
 * Per-token KL penalty between the policy and a frozen reference, from per-token logprobs of the
 * sampled tokens. Accepts one sequence (`number[]`) or a ragged batch (`number[][]`) and returns the
 * same shape.
 *
 * @example
 * ```ts
 * klPenalty([-1.2, -0.3], [-1.0, -0.5], 'k3'); // [0.0214…, 0.0187…]
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for an unknown estimator.
 * @throws {ShapeMismatchError} `SHAPE_MISMATCH` when the shapes differ.
 * @throws {NonFiniteError} `NON_FINITE` for NaN or infinite logprobs.
 */
export function klPenalty(
  logprobs: ArrayLike<number>,
  refLogprobs: ArrayLike<number>,
  estimator?: KlEstimator,
): number[];
export function klPenalty(
  logprobs: readonly ArrayLike<number>[],
  refLogprobs: readonly ArrayLike<number>[],
  estimator?: KlEstimator,
): number[][];
export function klPenalty(
  logprobs: ArrayLike<number> | readonly ArrayLike<number>[],
  refLogprobs: ArrayLike<number> | readonly ArrayLike<number>[],
  estimator: KlEstimator = 'k3',
): number[] | number[][] {
  validateOneOf(estimator, ESTIMATORS, { parameter: 'estimator', functionName: FN });
  if (!Array.isArray(logprobs) && !isNumericArrayLike(logprobs)) {
    throw new InvalidArgumentError({
      parameter: 'logprobs',
      functionName: FN,
      value: logprobs,
      expected: 'an array of logprobs, or one array per sequence',
    });
  }
  const ragged = Array.isArray(logprobs) && logprobs.length > 0 && isNumericArrayLike(logprobs[0]);
  if (!ragged) {
    const policy = validateFiniteArray(logprobs, { parameter: 'logprobs', functionName: FN });
    const reference = validateFiniteArray(refLogprobs, {
      parameter: 'refLogprobs',
      functionName: FN,
      length: policy.length,
    });
    return Array.from({ length: policy.length }, (_, index) =>
      klValue(policy[index]!, reference[index]!, estimator),
    );
  }
  const rows = logprobs as readonly ArrayLike<number>[];
  if (!Array.isArray(refLogprobs) || refLogprobs.length !== rows.length) {
    throw new ShapeMismatchError({
      parameter: 'refLogprobs',
      functionName: FN,
      expected: `${rows.length} sequences (like logprobs)`,
      actual: Array.isArray(refLogprobs)
        ? `${refLogprobs.length} sequences`
        : 'not an array of sequences',
    });
  }
  return rows.map((row, sequence) => {
    const policy = validateFiniteArray(row, {
      parameter: `logprobs[${sequence}]`,
      functionName: FN,
    });
    const reference = validateFiniteArray(refLogprobs[sequence], {
      parameter: `refLogprobs[${sequence}]`,
      functionName: FN,
      length: policy.length,
    });
    return Array.from({ length: policy.length }, (_, index) =>
      klValue(policy[index]!, reference[index]!, estimator),
    );
  });
}
