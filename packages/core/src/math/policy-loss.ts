import { aggregationWeights } from './aggregate-loss.js';
import { klGradient, klValue } from './kl.js';
import {
  type PolicyLossInput,
  type PolicyLossSettings,
  readPolicyLossInput,
} from './policy-loss-input.js';

export type {
  LossMode,
  PolicyLossInput,
  RatioLevel,
} from './policy-loss-input.js';
export { LOSS_MODES, POLICY_LOSS_DEFAULTS } from './policy-loss-input.js';

/** Token-weighted means over unmasked tokens, as TRL/verl log them. */
export type PolicyLossMetrics = {
  /** Fraction of tokens with A < 0 and ratio < 1 − ε_low (TRL `clip_ratio/low_mean`; 0 for `sapo`). */
  clipRatioLow: number;
  /** Fraction of tokens with A > 0 and ratio > 1 + ε_high (TRL `clip_ratio/high_mean`; 0 for `sapo`). */
  clipRatioHigh: number;
  /** Either of the two (TRL `clip_ratio/region_mean`). */
  clipRatioRegion: number;
  /**
   * Fraction of tokens where the clipped term was larger than the unclipped one (verl
   * `pg_clipfrac`); for `cispo`, where the weight was clipped (either side); 0 for `sapo`.
   */
  clipFraction: number;
  /** Fraction of tokens capped by the dual clip (verl `pg_clipfrac_lower`). */
  dualClipFraction: number;
  /** Fraction of tokens whose policy term the off-policy sequence mask dropped. */
  offPolicyMaskedFraction: number;
  /** Mean of (oldLogprob − logprob) (verl `ppo_kl`). */
  approxKl: number;
  /**
   * Mean KL to the reference under the chosen estimator (0 without a reference); with
   * `useBiasCorrectionKl`, of the ratio-weighted estimate (as TRL logs it).
   */
  kl: number;
  /** Mean policy entropy (0 without entropies). */
  entropy: number;
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  /** Number of unmasked tokens. */
  tokens: number;
};

/** Result of {@link policyLoss}. */
export type PolicyLossResult = {
  /** The aggregated scalar loss. */
  loss: number;
  /** The aggregated policy-gradient term alone (without KL and entropy). */
  policyLoss: number;
  /** Per-token total loss: w_is·keep·pg + β·kl − η·keep·entropy (0 where masked). */
  perTokenLoss: number[][];
  /**
   * d loss / d logprob for every token, through the clip, dual clip, δ cap, SAPO gate, KL
   * estimator (and its ratio weight) and aggregation weights (the entropy term depends on logits,
   * not on this logprob, and is excluded; the masks are constants). For `sequence` ratios every
   * ratio-dependent term (the surrogate, the bias-corrected KL's ratio weight) takes the GSPO-token
   * gradient (ratio value s_i, d s_i,t / d logp_t = s_i): a token's gradient depends on its own
   * weights only, so masks and per-token weights select tokens as they do for token ratios.
   */
  gradLogprobs: number[][];
  /** The ratio value used at every token (token ratio, or the sequence ratio repeated). */
  ratios: number[][];
  metrics: PolicyLossMetrics;
};

/** One token's policy-gradient term: value, d / d logp and its clip statistics. */
type Surrogate = { pg: number; gradient: number; clipped: boolean; dual: boolean };

/** The policy-gradient term of `lossMode` at one token (see {@link LossMode}). */
function surrogate(
  s: PolicyLossSettings,
  advantage: number,
  ratio: number,
  ratioGradient: number,
  logprob: number,
): Surrogate {
  const low = 1 - s.epsilonLow;
  const high = 1 + s.epsilonHigh;
  if (s.lossMode === 'cispo') {
    const weight = Math.min(Math.max(ratio, low), high);
    return {
      pg: -weight * advantage * logprob,
      gradient: -weight * advantage,
      clipped: ratio < low || ratio > high,
      dual: false,
    };
  }
  if (s.lossMode === 'sapo') {
    const tau = advantage > 0 ? s.sapoTemperaturePos : s.sapoTemperatureNeg;
    const gate = sigmoid(tau * (ratio - 1));
    return {
      pg: (-advantage * gate * 4) / tau,
      gradient: -advantage * 4 * gate * (1 - gate) * ratioGradient,
      clipped: false,
      dual: false,
    };
  }
  const { delta, dualClip } = s;
  const capped = delta === undefined ? ratio : Math.min(ratio, delta);
  const cappedGradient = delta !== undefined && ratio > delta ? 0 : ratioGradient;
  const clippedRatio = Math.min(Math.max(ratio, low), high);
  const clippedGradient = ratio < low || ratio > high ? 0 : ratioGradient;
  const unclippedLoss = -advantage * capped;
  const clippedLoss = -advantage * clippedRatio;
  const clipped = clippedLoss > unclippedLoss;
  let pg = clipped ? clippedLoss : unclippedLoss;
  let gradient = -advantage * (clipped ? clippedGradient : cappedGradient);
  let dual = false;
  if (dualClip !== undefined && advantage < 0 && pg > -advantage * dualClip) {
    pg = -advantage * dualClip;
    gradient = 0;
    dual = true;
  }
  return { pg, gradient, clipped, dual };
}

/** The logistic function, without overflow for large |x|. */
function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

/** Ratio values and d ratio / d logp per token (0 where the log-ratio clamp binds). */
function computeRatios(s: PolicyLossSettings) {
  const ratios: number[][] = [];
  const ratioGradients: number[][] = [];
  s.logprobs.forEach((current, sequence) => {
    const old = s.oldLogprobs[sequence]!;
    const rowMask = s.mask[sequence]!;
    const length = current.length;
    if (s.ratioLevel === 'token') {
      const row: number[] = new Array(length);
      const gradientRow: number[] = new Array(length);
      for (let index = 0; index < length; index++) {
        const logRatio = current[index]! - old[index]!;
        const clamped = Math.min(Math.max(logRatio, -20), 20);
        row[index] = Math.exp(clamped);
        gradientRow[index] = clamped === logRatio ? row[index]! : 0;
      }
      ratios.push(row);
      ratioGradients.push(gradientRow);
      return;
    }
    let sum = 0;
    let count = 0;
    for (let index = 0; index < length; index++) {
      const m = rowMask[index]!;
      if (m === 0) continue;
      sum += m * (current[index]! - old[index]!);
      count += m;
    }
    const logRatio = count > 0 ? sum / count : 0;
    const clamped = Math.min(logRatio, 10);
    const value = Math.exp(clamped);
    const slope = clamped === logRatio ? value : 0;
    ratios.push(new Array(length).fill(value));
    ratioGradients.push(new Array(length).fill(slope));
  });
  return { ratios, ratioGradients };
}

/**
 * Per sequence: whether the off-policy mask drops its A < 0 tokens, i.e. whether the mean over
 * its unmasked tokens of `behaviour − logprob` exceeds δ (DeepSeek-V3.2 Eq. 9, TRL's
 * `get_off_policy_mask`).
 */
function offPolicySequences(s: PolicyLossSettings): boolean[] | undefined {
  const threshold = s.offPolicyMaskThreshold;
  if (threshold === undefined) return undefined;
  const behaviour = s.behaviourLogprobs ?? s.oldLogprobs;
  return s.logprobs.map((current, sequence) => {
    const rowMask = s.mask[sequence]!;
    const row = behaviour[sequence]!;
    let sum = 0;
    let count = 0;
    for (let index = 0; index < current.length; index++) {
      const m = rowMask[index]!;
      if (m === 0) continue;
      sum += m * (row[index]! - current[index]!);
      count += m;
    }
    return count > 0 && sum / count > threshold;
  });
}

/**
 * The policy-gradient loss on plain arrays: the float64 reference the trainer must match.
 *
 * Per token, with ratio r = exp(logp − oldLogp) (token level, log-ratio clamped to ±20 as in verl)
 * or the GSPO sequence ratio s = exp(mean_t(logp − oldLogp)) (clamped to ≤ 10 in log space), the
 * policy term pg of `lossMode` (`clip`: `max(−A·min(r, δ), −A·clip(r, 1 − ε_low, 1 + ε_high))`, then
 * for A < 0 with dual clip `min(pg, −A·c)`; `cispo`: `−sg(clip(r))·A·logp`; `sapo`:
 * `−A·σ(τ(r − 1))·4/τ`), then the token loss is `w_is·keep·pg + β·KL_t − η·keep·H_t` (with
 * `useBiasCorrectionKl`, `β·r·KL_t`), keep = the off-policy mask × `entropyMask`, aggregated by
 * `aggregation`.
 *
 * @example
 * ```ts
 * const { loss, metrics } = policyLoss({
 *   logprobs: [[-0.9, -1.1]], oldLogprobs: [[-1.0, -1.0]], advantages: [1.29],
 *   epsilonLow: 0.2, epsilonHigh: 0.28, aggregation: 'token-mean',
 * });
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} naming the
 * parameter; `INEFFECTIVE_OPTION` for a setting the combination does not read (a dual clip or δ
 * with `cispo`, ε or δ with `sapo`, SAPO temperatures without `sapo`, `useBiasCorrectionKl` at
 * β = 0, `behaviourLogprobs` without `offPolicyMaskThreshold`).
 */
export function policyLoss(input: PolicyLossInput): PolicyLossResult {
  const s = readPolicyLossInput(input);
  const { logprobs, oldLogprobs, mask } = s;
  const { ratios, ratioGradients } = computeRatios(s);
  const dropSequence = offPolicySequences(s);
  const correctKl = s.useBiasCorrectionKl && s.klCoefficient !== 0;

  const perTokenLoss: number[][] = [];
  const perTokenPolicy: number[][] = [];
  const perTokenGradient: number[][] = [];
  const stats = {
    low: 0,
    high: 0,
    clipped: 0,
    dual: 0,
    offPolicy: 0,
    approxKl: 0,
    kl: 0,
    entropy: 0,
    ratioSum: 0,
    ratioMin: Infinity,
    ratioMax: -Infinity,
    tokens: 0,
  };
  const isClip = s.lossMode !== 'sapo';
  for (let sequence = 0; sequence < logprobs.length; sequence++) {
    const length = logprobs[sequence]!.length;
    const lossRow = new Array<number>(length).fill(0);
    const policyRow = new Array<number>(length).fill(0);
    const gradientRow = new Array<number>(length).fill(0);
    for (let index = 0; index < length; index++) {
      const m = mask[sequence]![index]!;
      if (m === 0) continue;
      const advantage = s.advantageAt(sequence, index);
      const ratio = ratios[sequence]![index]!;
      const ratioGradient = ratioGradients[sequence]![index]!;
      const current = logprobs[sequence]![index]!;
      const term = surrogate(s, advantage, ratio, ratioGradient, current);
      if (term.clipped) stats.clipped += m;
      if (term.dual) stats.dual += m;
      if (isClip && advantage < 0 && ratio < 1 - s.epsilonLow) stats.low += m;
      if (isClip && advantage > 0 && ratio > 1 + s.epsilonHigh) stats.high += m;

      let keep = s.entropyMask ? s.entropyMask[sequence]![index]! : 1;
      if (dropSequence?.[sequence] === true && advantage < 0) {
        keep = 0;
        stats.offPolicy += m;
      }
      const importance = s.importanceWeights ? s.importanceWeights[sequence]![index]! : 1;
      const policy = importance * keep * term.pg;
      let total = policy;
      let gradient = importance * keep * term.gradient;
      if (s.refLogprobs) {
        const reference = s.refLogprobs[sequence]![index]!;
        const kl = klValue(current, reference, s.klEstimator);
        const klSlope = klGradient(current, reference, s.klEstimator);
        const weight = correctKl ? ratio : 1;
        if (s.klCoefficient !== 0) {
          total += s.klCoefficient * weight * kl;
          gradient += s.klCoefficient * weight * klSlope;
          // d r / d logp of the ratio weight (GSPO: the GSPO-token d s_i,t / d logp_t = s_i)
          if (correctKl) gradient += s.klCoefficient * ratioGradient * kl;
        }
        stats.kl += m * weight * kl;
      }
      if (s.entropies) {
        const entropy = s.entropies[sequence]![index]!;
        total -=
          s.entropyCoefficient * (s.entropyMask ? s.entropyMask[sequence]![index]! : 1) * entropy;
        stats.entropy += m * entropy;
      }
      lossRow[index] = total + 0;
      policyRow[index] = policy + 0;
      gradientRow[index] = gradient;
      stats.approxKl += m * (oldLogprobs[sequence]![index]! - current);
      stats.ratioSum += m * ratio;
      stats.ratioMin = Math.min(stats.ratioMin, ratio);
      stats.ratioMax = Math.max(stats.ratioMax, ratio);
      stats.tokens += m;
    }
    perTokenLoss.push(lossRow);
    perTokenPolicy.push(policyRow);
    perTokenGradient.push(gradientRow);
  }

  const weights = aggregationWeights(mask, s.aggregation, s.aggregationOptions);
  let loss = 0;
  let policyOnly = 0;
  const gradLogprobs = weights.map((row, sequence) =>
    row.map((weight, index) => {
      loss += weight * perTokenLoss[sequence]![index]!;
      policyOnly += weight * perTokenPolicy[sequence]![index]!;
      return weight * perTokenGradient[sequence]![index]! + 0; // + 0 normalizes −0
    }),
  );
  const tokens = stats.tokens;
  const mean = (value: number) => (tokens > 0 ? value / tokens : 0);
  return {
    loss,
    policyLoss: policyOnly,
    perTokenLoss,
    gradLogprobs,
    ratios,
    metrics: {
      clipRatioLow: mean(stats.low),
      clipRatioHigh: mean(stats.high),
      clipRatioRegion: mean(stats.low + stats.high),
      clipFraction: mean(stats.clipped),
      dualClipFraction: mean(stats.dual),
      offPolicyMaskedFraction: mean(stats.offPolicy),
      approxKl: mean(stats.approxKl),
      kl: mean(stats.kl),
      entropy: mean(stats.entropy),
      ratioMean: mean(stats.ratioSum),
      ratioMin: tokens > 0 ? stats.ratioMin : 1,
      ratioMax: tokens > 0 ? stats.ratioMax : 1,
      tokens,
    },
  };
}
