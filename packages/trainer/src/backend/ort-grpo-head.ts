/**
 * GRPO's per-token loss gradient inside the `grads` graph (issue #14): d loss / d logprob of
 * @rlvr/core's `policyLoss` for token-level ratios — the clipped surrogate (ε_low, ε_high), the
 * optional δ cap and dual clip, the mismatch importance weights, the β-weighted KL estimator and
 * the aggregation weights — computed from the graph's own logprobs, so one forward + backward run
 * takes a GRPO step's micro-batch (the loss value and metrics still come from core's float64
 * `policyLoss` on the logprobs the run returns). Sequence-level ratios (GSPO) are not covered:
 * the trainer runs a forward graph first and feeds core's gradients as loss weights there.
 * @internal
 */
import type { KlEstimator } from '@rlvr/core';
import type { StepNodes } from './ort-train-step-nodes.js';

/** Which terms a GRPO head has (each an input of the graph). @internal */
export type GrpoHead = {
  /** π_old is the current policy (one iteration, one mini-batch): ratio 1, no `old_logprobs`. */
  onPolicy: boolean;
  /** The KL estimator when β > 0 (`ref_logprobs`, `beta`), else absent. */
  kl?: KlEstimator;
  /** `dual_clip` input (c > 1). */
  dualClip: boolean;
  /** `delta` input (δ cap of the unclipped ratio). */
  delta: boolean;
  /** `importance_weights` `[N]` input (mismatch correction). */
  importance: boolean;
};

/** The `[N]` inputs of a GRPO head besides `advantages` and `agg_weights`. @internal */
export function grpoTokenInputs(head: GrpoHead): string[] {
  return [
    'advantages',
    'agg_weights',
    ...(head.onPolicy ? [] : ['old_logprobs']),
    ...(head.kl ? ['ref_logprobs'] : []),
    ...(head.importance ? ['importance_weights'] : []),
  ];
}

/** The scalar inputs of a GRPO head. @internal */
export function grpoScalarInputs(head: GrpoHead): string[] {
  return [
    ...(head.onPolicy ? [] : ['eps_low', 'eps_high']),
    ...(head.kl ? ['beta'] : []),
    ...(head.dualClip && !head.onPolicy ? ['dual_clip'] : []),
    ...(head.delta && !head.onPolicy ? ['delta'] : []),
  ];
}

/** d KL_t / d logprob of core's `klGradient` (k3: 0 where core clamps). */
function klGradient(nodes: StepNodes, logprobs: string, estimator: KlEstimator): string {
  const scalar = (value: number) => nodes.g.float([value], []);
  const difference = nodes.sub(logprobs, 'ref_logprobs');
  switch (estimator) {
    case 'k1':
      return scalar(1);
    case 'k2':
      return difference;
    case 'abs':
      return nodes.op('Sign', [difference]);
    case 'k3': {
      const logRatio = nodes.op('Neg', [difference]);
      const expm1 = nodes.sub(nodes.op('Exp', [logRatio]), scalar(1));
      const clamped = nodes.op('Or', [
        nodes.op('Greater', [nodes.op('Abs', [logRatio]), scalar(20)]),
        nodes.op('Greater', [nodes.sub(expm1, logRatio), scalar(10)]),
      ]);
      return nodes.op('Where', [clamped, scalar(0), nodes.op('Neg', [expm1])]);
    }
  }
}

/**
 * d (policy-gradient term) / d logprob per token: −A·r' through the clip (0 outside
 * [1 − ε_low, 1 + ε_high] where the clipped term wins), the δ cap and the dual clip; on-policy
 * (ratio exactly 1) it is −A.
 */
function surrogateGradient(nodes: StepNodes, logprobs: string, head: GrpoHead): string {
  const scalar = (value: number) => nodes.g.float([value], []);
  const negA = nodes.op('Neg', ['advantages']);
  if (head.onPolicy) return negA;
  const op = (type: string, inputs: string[]) => nodes.op(type, inputs);
  const where = (condition: string, a: string, b: string) => op('Where', [condition, a, b]);
  const zero = scalar(0);
  const logRatio = nodes.sub(logprobs, 'old_logprobs');
  const clampedLog = op('Clip', [logRatio, scalar(-20), scalar(20)]);
  const ratio = op('Exp', [clampedLog]);
  const ratioGrad = where(op('Equal', [clampedLog, logRatio]), ratio, zero);
  const capped = head.delta ? op('Min', [ratio, 'delta']) : ratio;
  const cappedGrad = head.delta
    ? where(op('Greater', [ratio, 'delta']), zero, ratioGrad)
    : ratioGrad;
  const low = nodes.sub(scalar(1), 'eps_low');
  const high = nodes.add(scalar(1), 'eps_high');
  const clippedRatio = op('Clip', [ratio, low, high]);
  const outside = op('Or', [op('Less', [ratio, low]), op('Greater', [ratio, high])]);
  const clippedGrad = where(outside, zero, ratioGrad);
  const unclippedLoss = nodes.mul(negA, capped);
  const clippedLoss = nodes.mul(negA, clippedRatio);
  const useClipped = op('Greater', [clippedLoss, unclippedLoss]);
  const gradient = nodes.mul(negA, where(useClipped, clippedGrad, cappedGrad));
  if (!head.dualClip) return gradient;
  const pg = where(useClipped, clippedLoss, unclippedLoss);
  const dual = op('And', [
    op('Less', ['advantages', zero]),
    op('Greater', [pg, nodes.mul(negA, 'dual_clip')]),
  ]);
  return where(dual, zero, gradient);
}

/**
 * The loss weights `[N]` (−d loss / d logprob, as `loss_weights` in the SFT head) of core's
 * `policyLoss` at the graph's logprobs `[N]`: `−w_agg · (w_is · d pg + β · d KL)`.
 * @internal
 */
export function grpoLossWeights(nodes: StepNodes, logprobs: string, head: GrpoHead): string {
  let gradient = surrogateGradient(nodes, logprobs, head);
  if (head.importance) gradient = nodes.mul(gradient, 'importance_weights');
  if (head.kl) {
    gradient = nodes.add(gradient, nodes.mul('beta', klGradient(nodes, logprobs, head.kl)));
  }
  return nodes.op('Neg', [nodes.mul('agg_weights', gradient)]);
}
