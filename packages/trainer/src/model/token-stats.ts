import * as tf from '@tensorflow/tfjs-core';

/** Per-token statistics of the sampled/target tokens from logits `[N, vocab]`. @internal */
export type TokenStats = {
  /** log softmax of the logits `[N, vocab]`. */
  logSoftmax: tf.Tensor2D;
  /** softmax `[N, vocab]`. */
  probabilities: tf.Tensor2D;
  /** One-hot of the targets `[N, vocab]`. */
  oneHot: tf.Tensor2D;
  /** log p(target) `[N]`. */
  logprobs: tf.Tensor1D;
  /** −Σ p log p `[N]` (nats). */
  entropy: tf.Tensor1D;
  /** The temperature T the logits were divided by (1: none). */
  temperature: number;
};

/**
 * Logprobs of `targets` and entropies of the tempered distribution `softmax(logits / T)` over the
 * whole vocabulary, with `sum(logSoftmax · oneHot)` (tfjs's batched gather is wrong on wasm).
 * Call inside `tf.tidy`. @internal
 */
export function tokenStats(logits: tf.Tensor2D, targets: Int32Array, temperature = 1): TokenStats {
  const vocab = logits.shape[1];
  const scaled = temperature === 1 ? logits : tf.div(logits, tf.scalar(temperature));
  const logSoftmax = tf.logSoftmax(scaled) as tf.Tensor2D;
  const probabilities = tf.exp(logSoftmax) as tf.Tensor2D;
  // tfjs-backend-wasm 4.22's OneHot ignores a float32 dtype and writes int32 bits into a tensor
  // labelled float32 (1 reads as 1.4e-45): build the int32 one-hot and cast it instead.
  const oneHot = tf.cast(tf.oneHot(tf.tensor1d(targets, 'int32'), vocab), 'float32') as tf.Tensor2D;
  const logprobs = tf.sum(tf.mul(logSoftmax, oneHot), -1) as tf.Tensor1D;
  const entropy = tf.neg(tf.sum(tf.mul(probabilities, logSoftmax), -1)) as tf.Tensor1D;
  return { logSoftmax, probabilities, oneHot, logprobs, entropy, temperature };
}

/**
 * d loss / d logits from d loss / d logprob (`gradLogprobs`, `[N]`) and d loss / d entropy
 * (`gradEntropy`, `[N]`, optional), with p = softmax(logits / T):
 * `(g·(onehot − p) − e·p·(log p + H)) / T`. Call inside `tf.tidy`. @internal
 */
export function logitsGradient(
  stats: TokenStats,
  gradLogprobs: Float32Array,
  gradEntropy: Float32Array | null,
): tf.Tensor2D {
  const n = gradLogprobs.length;
  const g = tf.tensor2d(gradLogprobs, [n, 1]);
  let gradient = tf.mul(g, tf.sub(stats.oneHot, stats.probabilities));
  if (gradEntropy !== null) {
    const e = tf.tensor2d(gradEntropy, [n, 1]);
    const h = tf.reshape(stats.entropy, [n, 1]);
    gradient = tf.sub(
      gradient,
      tf.mul(tf.mul(e, stats.probabilities), tf.add(stats.logSoftmax, h)),
    );
  }
  if (stats.temperature !== 1) gradient = tf.div(gradient, tf.scalar(stats.temperature));
  return gradient as tf.Tensor2D;
}
