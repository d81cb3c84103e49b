import type { policyLoss } from '@rlvr/core';
import type * as tf from '@tensorflow/tfjs-core';
import type { GrpoStepMetrics } from './trainer-types.js';

/** Token-weighted sums of core's loss metrics over micro-batches. @internal */
export type MetricSums = {
  clipRatioLow: number;
  clipRatioHigh: number;
  clipRatioRegion: number;
  clipFraction: number;
  dualClipFraction: number;
  offPolicyMaskedFraction: number;
  approxKl: number;
  kl: number;
  entropy: number;
  ratioMean: number;
};

/** Summed gradients (owned by the holder) and the loss metrics of one optimizer step. @internal */
export type Accumulated = {
  grads: Map<string, tf.Tensor>;
  loss: number;
  policyOnly: number;
  sums: MetricSums;
  ratioMin: number;
  ratioMax: number;
  tokens: number;
};

/** Zeroed {@link MetricSums}. @internal */
export function emptySums(): MetricSums {
  return {
    clipRatioLow: 0,
    clipRatioHigh: 0,
    clipRatioRegion: 0,
    clipFraction: 0,
    dualClipFraction: 0,
    offPolicyMaskedFraction: 0,
    approxKl: 0,
    kl: 0,
    entropy: 0,
    ratioMean: 0,
  };
}

/** Loss metrics of a step without loss-carrying tokens (or a skipped one). @internal */
export const EMPTY_LOSS_METRICS = Object.freeze({
  policyLoss: 0,
  tokens: 0,
  clipRatioLow: 0,
  clipRatioHigh: 0,
  clipRatioRegion: 0,
  clipFraction: 0,
  dualClipFraction: 0,
  offPolicyMaskedFraction: 0,
  approxKl: 0,
  kl: 0,
  entropy: 0,
  ratioMean: 1,
  ratioMin: 1,
  ratioMax: 1,
});

/** Adds one micro-batch's core `policyLoss` result into the running sums. @internal */
export function addLossMetrics(
  into: Pick<Accumulated, 'sums' | 'ratioMin' | 'ratioMax' | 'policyOnly'>,
  result: ReturnType<typeof policyLoss>,
): void {
  const m = result.metrics;
  into.policyOnly += result.policyLoss;
  for (const key of Object.keys(into.sums) as (keyof MetricSums)[]) {
    into.sums[key] += m[key] * m.tokens;
  }
  if (m.tokens > 0) {
    into.ratioMin = Math.min(into.ratioMin, m.ratioMin);
    into.ratioMax = Math.max(into.ratioMax, m.ratioMax);
  }
}

/** The token means of the accumulated loss metrics. @internal */
export function lossMetricsOf(
  accumulated: Omit<Accumulated, 'grads'>,
): Omit<GrpoStepMetrics, 'step' | 'learningRate' | 'gradNorm' | 'skipped' | 'timeMs'> {
  const { loss, policyOnly, sums, ratioMin, ratioMax, tokens } = accumulated;
  const mean = (value: number) => (tokens > 0 ? value / tokens : 0);
  return {
    loss,
    policyLoss: policyOnly,
    tokens,
    clipRatioLow: mean(sums.clipRatioLow),
    clipRatioHigh: mean(sums.clipRatioHigh),
    clipRatioRegion: mean(sums.clipRatioRegion),
    clipFraction: mean(sums.clipFraction),
    dualClipFraction: mean(sums.dualClipFraction),
    offPolicyMaskedFraction: mean(sums.offPolicyMaskedFraction),
    approxKl: mean(sums.approxKl),
    kl: mean(sums.kl),
    entropy: mean(sums.entropy),
    ratioMean: tokens > 0 ? mean(sums.ratioMean) : 1,
    ratioMin: tokens > 0 ? ratioMin : 1,
    ratioMax: tokens > 0 ? ratioMax : 1,
  };
}
