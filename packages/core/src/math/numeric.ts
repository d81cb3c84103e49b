import { validateFiniteArray } from '../validation/validate.js';

/**
 * log(Σ exp(x_i)), computed stably (max-shifted). Returns -Infinity for an empty input or when all
 * entries are -Infinity.
 * @throws {InvalidArgumentError} | {@link NonFiniteError} on NaN or +Infinity entries.
 */
export function logSumExp(values: ArrayLike<number>): number {
  validateFiniteArray(values, {
    parameter: 'values',
    functionName: 'logSumExp',
    allowInfinity: 'negative',
  });
  return logSumExpUnchecked(values);
}

/** @internal */
export function logSumExpUnchecked(values: ArrayLike<number>): number {
  let max = -Infinity;
  for (let index = 0; index < values.length; index++)
    if (values[index]! > max) max = values[index]!;
  if (max === -Infinity) return -Infinity;
  let sum = 0;
  for (let index = 0; index < values.length; index++) sum += Math.exp(values[index]! - max);
  return max + Math.log(sum);
}

/**
 * Log-softmax of a logit vector, in float64: `x_i − logSumExp(x)`.
 * @example
 * ```ts
 * logSoftmax([0, 0]); // [-0.693…, -0.693…]
 * ```
 * @throws {InvalidArgumentError} | {@link NonFiniteError} on NaN or +Infinity logits.
 */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  validateFiniteArray(logits, {
    parameter: 'logits',
    functionName: 'logSoftmax',
    allowInfinity: 'negative',
  });
  const normalizer = logSumExpUnchecked(logits);
  const out = new Float64Array(logits.length);
  for (let index = 0; index < logits.length; index++) out[index] = logits[index]! - normalizer;
  return out;
}

/**
 * Softmax of a logit vector (float64, max-shifted).
 * @throws {InvalidArgumentError} | {@link NonFiniteError} on NaN or +Infinity logits.
 */
export function softmax(logits: ArrayLike<number>): Float64Array {
  const out = logSoftmax(logits);
  for (let index = 0; index < out.length; index++) out[index] = Math.exp(out[index]!);
  return out;
}

/**
 * Shannon entropy (nats) of the softmax distribution of `logits`: −Σ p_i log p_i. This is the
 * per-token entropy logged by TRL/verl and used by the entropy bonus.
 * @throws {InvalidArgumentError} | {@link NonFiniteError} on NaN or +Infinity logits.
 */
export function entropyFromLogits(logits: ArrayLike<number>): number {
  const logProbabilities = logSoftmax(logits);
  let entropy = 0;
  for (let index = 0; index < logProbabilities.length; index++) {
    const logProbability = logProbabilities[index]!;
    if (logProbability === -Infinity) continue;
    entropy -= Math.exp(logProbability) * logProbability;
  }
  return entropy;
}

/** `population` divides by n, `sample` by n − 1 (Bessel; what `torch.std` does in TRL/verl). */
export type StdKind = 'population' | 'sample';

/** Mean and standard deviation of the given values (0 and 0 for none). @internal */
export function meanAndStd(values: readonly number[], std: StdKind): { mean: number; std: number } {
  const count = values.length;
  if (count === 0) return { mean: 0, std: 0 };
  let sum = 0;
  for (const value of values) sum += value;
  const mean = sum / count;
  let squares = 0;
  for (const value of values) squares += (value - mean) * (value - mean);
  const denominator = std === 'sample' ? count - 1 : count;
  return { mean, std: denominator > 0 ? Math.sqrt(squares / denominator) : 0 };
}
