import * as tf from '@tensorflow/tfjs-core';

/** What the RMSNorm backward needs from the forward: 1/rms per row and x/rms. @internal */
export type NormCache = { r: tf.Tensor2D; xhat: tf.Tensor2D };

/** @internal */
export function rmsNormForward(x: tf.Tensor2D, epsilon: number): NormCache {
  const r = tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), epsilon)) as tf.Tensor2D;
  return { r, xhat: tf.mul(x, r) as tf.Tensor2D };
}

/** dx = r · (dxhat − xhat · mean(dxhat · xhat)). @internal */
export function rmsNormBackward(norm: NormCache, dxhat: tf.Tensor2D): tf.Tensor2D {
  const projection = tf.mean(tf.mul(dxhat, norm.xhat), -1, true);
  return tf.mul(norm.r, tf.sub(dxhat, tf.mul(norm.xhat, projection))) as tf.Tensor2D;
}
