/**
 * GRPO's per-token loss gradient inside the `grads` graph (issue #14): d loss / d logprob of
 * @rlvr/core's `policyLoss` for token-level ratios — the policy term of its `lossMode` (the
 * clipped surrogate with ε_low, ε_high, the optional δ cap and dual clip; CISPO's clipped
 * stop-gradient weight; SAPO's soft gate), the mismatch importance weights, the off-policy
 * sequence mask (each sequence's mean KL to the behaviour policy taken in the graph from its own
 * logprobs), the high-entropy selection (a per-token input: its quantile is batch-wide), the
 * β-weighted KL estimator (optionally bias-corrected by the ratio, issue #33) and the aggregation
 * weights — computed from the graph's own logprobs, so one forward + backward run takes a GRPO
 * step's micro-batch (the loss value and metrics still come from core's float64 `policyLoss` on
 * the logprobs the run returns). Sequence-level ratios (GSPO) are not covered: the trainer runs a
 * forward graph first and feeds core's gradients as loss weights there.
 * @internal
 */
import type { KlEstimator, LossMode } from '@rlvr/core';
import { OnnxDataType } from '@rlvr/model';
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
  /**
   * The policy term (default `clip`): `cispo` reads `eps_low` / `eps_high` as its weight's bounds,
   * `sapo` the scalars `sapo_tau_pos` / `sapo_tau_neg` (off-policy; on-policy every mode is −A).
   */
  lossMode?: LossMode;
  /** The KL estimate weighted by the ratio, gradient through it (`useBiasCorrectionKl`). */
  biasCorrectedKl?: boolean;
  /**
   * The off-policy sequence mask: `[N]` inputs `behaviour_logprobs`, `sequence_ids` (the row of
   * the token's sequence in the micro-batch) and `loss_mask`, scalar `off_policy_threshold`.
   */
  offPolicyMask?: boolean;
  /** `entropy_mask` `[N]` input (the high-entropy selection: policy term × selection). */
  entropyMask?: boolean;
};

/** The `[N]` inputs of a GRPO head besides `advantages` and `agg_weights`. @internal */
export function grpoTokenInputs(head: GrpoHead): string[] {
  return [
    'advantages',
    'agg_weights',
    ...(head.onPolicy ? [] : ['old_logprobs']),
    ...(head.kl ? ['ref_logprobs'] : []),
    ...(head.importance ? ['importance_weights'] : []),
    ...(head.offPolicyMask ? ['behaviour_logprobs', 'sequence_ids', 'loss_mask'] : []),
    ...(head.entropyMask ? ['entropy_mask'] : []),
  ];
}

/** The scalar inputs of a GRPO head. @internal */
export function grpoScalarInputs(head: GrpoHead): string[] {
  const sapo = head.lossMode === 'sapo';
  return [
    ...(head.onPolicy || sapo ? [] : ['eps_low', 'eps_high']),
    ...(head.onPolicy || !sapo ? [] : ['sapo_tau_pos', 'sapo_tau_neg']),
    ...(head.kl ? ['beta'] : []),
    ...(head.dualClip && !head.onPolicy ? ['dual_clip'] : []),
    ...(head.delta && !head.onPolicy ? ['delta'] : []),
    ...(head.offPolicyMask ? ['off_policy_threshold'] : []),
  ];
}

/** The ratio r = exp(clamp(logp − oldLogp, ±20)) and d r / d logp (0 where the clamp binds). */
function ratioOf(nodes: StepNodes, logprobs: string): { ratio: string; ratioGrad: string } {
  const scalar = (value: number) => nodes.g.float([value], []);
  const logRatio = nodes.sub(logprobs, 'old_logprobs');
  const clampedLog = nodes.op('Clip', [logRatio, scalar(-20), scalar(20)]);
  const ratio = nodes.op('Exp', [clampedLog]);
  const equal = nodes.op('Equal', [clampedLog, logRatio]);
  return { ratio, ratioGrad: nodes.op('Where', [equal, ratio, scalar(0)]) };
}

/** KL_t of core's `klValue` (k3 with its clamps: log-ratio to ±20, value to [0, 10]). */
function klValue(nodes: StepNodes, logprobs: string, estimator: KlEstimator): string {
  const scalar = (value: number) => nodes.g.float([value], []);
  const difference = nodes.sub(logprobs, 'ref_logprobs');
  switch (estimator) {
    case 'k1':
      return difference;
    case 'k2':
      return nodes.mul(scalar(0.5), nodes.mul(difference, difference));
    case 'abs':
      return nodes.op('Abs', [difference]);
    case 'k3': {
      const logRatio = nodes.op('Clip', [nodes.op('Neg', [difference]), scalar(-20), scalar(20)]);
      const value = nodes.sub(nodes.sub(nodes.op('Exp', [logRatio]), scalar(1)), logRatio);
      return nodes.op('Clip', [value, scalar(0), scalar(10)]);
    }
  }
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
 * d (policy-gradient term) / d logprob per token: for `clip`, −A·r' through the clip (0 outside
 * [1 − ε_low, 1 + ε_high] where the clipped term wins), the δ cap and the dual clip; for `cispo`,
 * −A·clip(r, 1 − ε_low, 1 + ε_high); for `sapo`, −A·4σ(1 − σ)·r' with σ = σ(τ(r − 1)), τ by the
 * sign of A. On-policy (ratio exactly 1, r' = 1) it is −A for every mode.
 */
function surrogateGradient(nodes: StepNodes, logprobs: string, head: GrpoHead): string {
  const scalar = (value: number) => nodes.g.float([value], []);
  const negA = nodes.op('Neg', ['advantages']);
  if (head.onPolicy) return negA;
  const op = (type: string, inputs: string[]) => nodes.op(type, inputs);
  const where = (condition: string, a: string, b: string) => op('Where', [condition, a, b]);
  const zero = scalar(0);
  const { ratio, ratioGrad } = ratioOf(nodes, logprobs);
  if (head.lossMode === 'sapo') {
    const tau = where(op('Greater', ['advantages', zero]), 'sapo_tau_pos', 'sapo_tau_neg');
    const gate = op('Sigmoid', [nodes.mul(tau, nodes.sub(ratio, scalar(1)))]);
    const slope = nodes.mul(scalar(4), nodes.mul(gate, nodes.sub(scalar(1), gate)));
    return nodes.mul(negA, nodes.mul(slope, ratioGrad));
  }
  const low = nodes.sub(scalar(1), 'eps_low');
  const high = nodes.add(scalar(1), 'eps_high');
  const clippedRatio = op('Clip', [ratio, low, high]);
  if (head.lossMode === 'cispo') return nodes.mul(negA, clippedRatio);
  const capped = head.delta ? op('Min', [ratio, 'delta']) : ratio;
  const cappedGrad = head.delta
    ? where(op('Greater', [ratio, 'delta']), zero, ratioGrad)
    : ratioGrad;
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
 * DeepSeek-V3.2's off-policy sequence mask: true where A < 0 and the token's sequence has a mean
 * (over its `loss_mask`) of `behaviour_logprobs − logprobs` above `off_policy_threshold`. The
 * per-sequence sums are a scatter-add by `sequence_ids` and gathered back per token.
 */
function offPolicyDrop(nodes: StepNodes, logprobs: string): string {
  const scalar = (value: number) => nodes.g.float([value], []);
  const ids = nodes.op('Cast', ['sequence_ids'], { to: OnnxDataType.INT64 });
  const zeros = nodes.mul('loss_mask', scalar(0));
  const perSequence = (values: string) =>
    nodes.op('ScatterElements', [zeros, ids, values], { axis: 0, reduction: 'add' });
  const kl = nodes.mul('loss_mask', nodes.sub('behaviour_logprobs', logprobs));
  const mean = nodes.op('Div', [
    perSequence(kl),
    nodes.op('Max', [perSequence('loss_mask'), scalar(1e-30)]),
  ]);
  const meanAt = nodes.op('GatherElements', [mean, ids], { axis: 0 });
  return nodes.op('And', [
    nodes.op('Less', ['advantages', scalar(0)]),
    nodes.op('Greater', [meanAt, 'off_policy_threshold']),
  ]);
}

/** d (β·w·KL_t) / d logprob / β: KL′, or with the bias correction r·KL′ + r′·KL (on-policy r = r′ = 1). */
function klTermGradient(nodes: StepNodes, logprobs: string, head: GrpoHead, kl: KlEstimator) {
  const slope = klGradient(nodes, logprobs, kl);
  if (!head.biasCorrectedKl) return slope;
  const value = klValue(nodes, logprobs, kl);
  if (head.onPolicy) return nodes.add(slope, value);
  const { ratio, ratioGrad } = ratioOf(nodes, logprobs);
  return nodes.add(nodes.mul(ratio, slope), nodes.mul(ratioGrad, value));
}

/**
 * The loss weights `[N]` (−d loss / d logprob, as `loss_weights` in the SFT head) of core's
 * `policyLoss` at the graph's logprobs `[N]`: `−w_agg · (w_is · keep · d pg + β · d KL)`, keep =
 * the high-entropy selection × the off-policy mask.
 * @internal
 */
export function grpoLossWeights(nodes: StepNodes, logprobs: string, head: GrpoHead): string {
  let gradient = surrogateGradient(nodes, logprobs, head);
  if (head.importance) gradient = nodes.mul(gradient, 'importance_weights');
  if (head.entropyMask) gradient = nodes.mul(gradient, 'entropy_mask');
  if (head.offPolicyMask) {
    const zero = nodes.g.float([0], []);
    gradient = nodes.op('Where', [offPolicyDrop(nodes, logprobs), zero, gradient]);
  }
  if (head.kl) {
    gradient = nodes.add(
      gradient,
      nodes.mul('beta', klTermGradient(nodes, logprobs, head, head.kl)),
    );
  }
  return nodes.op('Neg', [nodes.mul('agg_weights', gradient)]);
}
