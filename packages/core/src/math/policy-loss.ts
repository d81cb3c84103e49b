import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { assertKnownKeys } from '../validation/options.js';
import {
  isNumericArrayLike,
  validateFiniteArray,
  validateNumber,
  validateOneOf,
  validateRagged,
} from '../validation/validate.js';
import {
  type AggregateLossOptions,
  aggregationWeights,
  LOSS_AGGREGATIONS,
  type LossAggregation,
} from './aggregate-loss.js';
import { type KlEstimator, klGradient, klValue } from './kl.js';

/** `token`: one ratio per token (PPO/GRPO); `sequence`: the length-normalized sequence ratio (GSPO). */
export type RatioLevel = 'token' | 'sequence';

/** Input of {@link policyLoss}: ragged per-token arrays, one row per completion. */
export type PolicyLossInput = {
  /** Current policy logprobs of the sampled tokens. */
  logprobs: readonly ArrayLike<number>[];
  /** Logprobs of the policy that generated the batch (π_old); equal to `logprobs` when μ = 1. */
  oldLogprobs: readonly ArrayLike<number>[];
  /** One advantage per sequence, or one per token (ragged). */
  advantages: ArrayLike<number> | readonly ArrayLike<number>[];
  /** 1 = token counts, 0 = masked (prompt, padding, truncated completions). Default all ones. */
  mask?: readonly ArrayLike<number>[];
  /** Default `token`. */
  ratioLevel?: RatioLevel;
  /** Lower clip ε_low: ratio ≥ 1 − ε_low. Default 0.2. */
  epsilonLow?: number;
  /** Upper clip ε_high (clip-higher, DAPO: 0.28). Default = epsilonLow. */
  epsilonHigh?: number;
  /** Dual-clip constant c > 1: for A < 0 the loss is at most −A·c (verl `clip_ratio_c`, e.g. 3). */
  dualClip?: number;
  /** Two-sided clip δ > 1 + ε_high: the unclipped ratio is capped at δ (TRL `delta`, INTELLECT-2). */
  delta?: number;
  /** Frozen reference logprobs; needed when `klCoefficient` > 0. */
  refLogprobs?: readonly ArrayLike<number>[];
  /** β: weight of the per-token KL penalty added to the loss. Default 0 (no reference needed). */
  klCoefficient?: number;
  /** Default `k3`. */
  klEstimator?: KlEstimator;
  /** Per-token entropies of the current policy (nats), for the entropy bonus. */
  entropies?: readonly ArrayLike<number>[];
  /** η: the loss gets −η·entropy per token. Default 0. */
  entropyCoefficient?: number;
  /** Per-token importance weights from {@link mismatchCorrection}, multiplying the policy term. */
  importanceWeights?: readonly ArrayLike<number>[];
  /** Default `seq-mean-token-mean`. */
  aggregation?: LossAggregation;
  /** Global counts / normalizer for the aggregation (see {@link AggregateLossOptions}). */
  aggregationOptions?: AggregateLossOptions;
};

/** Token-weighted means over unmasked tokens, as TRL/verl log them. */
export type PolicyLossMetrics = {
  /** Fraction of tokens with A < 0 and ratio < 1 − ε_low (TRL `clip_ratio/low_mean`). */
  clipRatioLow: number;
  /** Fraction of tokens with A > 0 and ratio > 1 + ε_high (TRL `clip_ratio/high_mean`). */
  clipRatioHigh: number;
  /** Either of the two (TRL `clip_ratio/region_mean`). */
  clipRatioRegion: number;
  /** Fraction of tokens where the clipped term was larger than the unclipped one (verl `pg_clipfrac`). */
  clipFraction: number;
  /** Fraction of tokens capped by the dual clip (verl `pg_clipfrac_lower`). */
  dualClipFraction: number;
  /** Mean of (oldLogprob − logprob) (verl `ppo_kl`). */
  approxKl: number;
  /** Mean KL to the reference under the chosen estimator (0 without a reference). */
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
  /** Per-token total loss: w_is·pg + β·kl − η·entropy (0 where masked). */
  perTokenLoss: number[][];
  /**
   * d loss / d logprob for every token, through the clip, dual clip, δ cap, KL estimator and
   * aggregation weights (the entropy term depends on logits, not on this logprob, and is excluded).
   * For `sequence` ratios this is the GSPO-token gradient (ratio value s_i, d s_i,t / d logp_t = s_i).
   */
  gradLogprobs: number[][];
  /** The ratio value used at every token (token ratio, or the sequence ratio repeated). */
  ratios: number[][];
  metrics: PolicyLossMetrics;
};

const FN = 'policyLoss';

/**
 * The PPO/GRPO clipped surrogate on plain arrays: the float64 reference the tfjs trainer must match.
 *
 * Per token, with ratio r = exp(logp − oldLogp) (token level, log-ratio clamped to ±20 as in verl)
 * or the GSPO sequence ratio s = exp(mean_t(logp − oldLogp)) (clamped to ≤ 10 in log space):
 * `pg = max(−A·min(r, δ), −A·clip(r, 1 − ε_low, 1 + ε_high))`, then for A < 0 with dual clip
 * `pg = min(pg, −A·c)`; the token loss is `w_is·pg + β·KL_t − η·H_t`, aggregated by `aggregation`.
 *
 * @example
 * ```ts
 * const { loss, metrics } = policyLoss({
 *   logprobs: [[-0.9, -1.1]], oldLogprobs: [[-1.0, -1.0]], advantages: [1.29],
 *   epsilonLow: 0.2, epsilonHigh: 0.28, aggregation: 'token-mean',
 * });
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} naming the
 * parameter.
 */
export function policyLoss(input: PolicyLossInput): PolicyLossResult {
  const settings = readInput(input);
  const { logprobs, oldLogprobs, mask, epsilonLow, epsilonHigh, dualClip, delta } = settings;
  const sequenceCount = logprobs.length;

  // Ratios (value) and d ratio / d logp.
  const ratios: number[][] = [];
  const ratioGradients: number[][] = [];
  for (let sequence = 0; sequence < sequenceCount; sequence++) {
    const current = logprobs[sequence]!;
    const old = oldLogprobs[sequence]!;
    const rowMask = mask[sequence]!;
    const length = current.length;
    if (settings.ratioLevel === 'token') {
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
    } else {
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
      ratios.push(new Array(length).fill(value));
      ratioGradients.push(new Array(length).fill(clamped === logRatio ? value : 0));
    }
  }

  const perTokenLoss: number[][] = [];
  const perTokenPolicy: number[][] = [];
  const perTokenGradient: number[][] = [];
  const stats = {
    low: 0,
    high: 0,
    clipped: 0,
    dual: 0,
    approxKl: 0,
    kl: 0,
    entropy: 0,
    ratioSum: 0,
    ratioMin: Infinity,
    ratioMax: -Infinity,
    tokens: 0,
  };
  for (let sequence = 0; sequence < sequenceCount; sequence++) {
    const length = logprobs[sequence]!.length;
    const lossRow = new Array<number>(length).fill(0);
    const policyRow = new Array<number>(length).fill(0);
    const gradientRow = new Array<number>(length).fill(0);
    for (let index = 0; index < length; index++) {
      const m = mask[sequence]![index]!;
      if (m === 0) continue;
      const advantage = settings.advantageAt(sequence, index);
      const ratio = ratios[sequence]![index]!;
      const ratioGradient = ratioGradients[sequence]![index]!;
      const capped = delta === undefined ? ratio : Math.min(ratio, delta);
      const cappedGradient = delta !== undefined && ratio > delta ? 0 : ratioGradient;
      const clippedRatio = Math.min(Math.max(ratio, 1 - epsilonLow), 1 + epsilonHigh);
      const clippedGradient = ratio < 1 - epsilonLow || ratio > 1 + epsilonHigh ? 0 : ratioGradient;
      const unclippedLoss = -advantage * capped;
      const clippedLoss = -advantage * clippedRatio;
      let pg: number;
      let pgGradient: number;
      if (clippedLoss > unclippedLoss) {
        pg = clippedLoss;
        pgGradient = -advantage * clippedGradient;
        stats.clipped += m;
      } else {
        pg = unclippedLoss;
        pgGradient = -advantage * cappedGradient;
      }
      if (dualClip !== undefined && advantage < 0 && pg > -advantage * dualClip) {
        pg = -advantage * dualClip;
        pgGradient = 0;
        stats.dual += m;
      }
      if (advantage < 0 && ratio < 1 - epsilonLow) stats.low += m;
      if (advantage > 0 && ratio > 1 + epsilonHigh) stats.high += m;

      const importance = settings.importanceWeights
        ? settings.importanceWeights[sequence]![index]!
        : 1;
      let total = importance * pg;
      let gradient = importance * pgGradient;
      if (settings.klCoefficient !== 0) {
        const current = logprobs[sequence]![index]!;
        const reference = settings.refLogprobs![sequence]![index]!;
        const kl = klValue(current, reference, settings.klEstimator);
        total += settings.klCoefficient * kl;
        gradient += settings.klCoefficient * klGradient(current, reference, settings.klEstimator);
        stats.kl += m * kl;
      } else if (settings.refLogprobs) {
        stats.kl +=
          m *
          klValue(
            logprobs[sequence]![index]!,
            settings.refLogprobs[sequence]![index]!,
            settings.klEstimator,
          );
      }
      if (settings.entropies) {
        const entropy = settings.entropies[sequence]![index]!;
        total -= settings.entropyCoefficient * entropy;
        stats.entropy += m * entropy;
      }
      lossRow[index] = total;
      policyRow[index] = importance * pg;
      gradientRow[index] = gradient + 0; // normalizes -0
      stats.approxKl += m * (oldLogprobs[sequence]![index]! - logprobs[sequence]![index]!);
      stats.ratioSum += m * ratio;
      stats.ratioMin = Math.min(stats.ratioMin, ratio);
      stats.ratioMax = Math.max(stats.ratioMax, ratio);
      stats.tokens += m;
    }
    perTokenLoss.push(lossRow);
    perTokenPolicy.push(policyRow);
    perTokenGradient.push(gradientRow);
  }

  const weights = aggregationWeights(mask, settings.aggregation, settings.aggregationOptions);
  let loss = 0;
  let policyOnly = 0;
  const gradLogprobs = weights.map((row, sequence) =>
    row.map((weight, index) => {
      loss += weight * perTokenLoss[sequence]![index]!;
      policyOnly += weight * perTokenPolicy[sequence]![index]!;
      return weight * perTokenGradient[sequence]![index]!;
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

type Settings = {
  logprobs: readonly ArrayLike<number>[];
  oldLogprobs: readonly ArrayLike<number>[];
  mask: readonly ArrayLike<number>[];
  advantageAt: (sequence: number, index: number) => number;
  ratioLevel: RatioLevel;
  epsilonLow: number;
  epsilonHigh: number;
  dualClip: number | undefined;
  delta: number | undefined;
  refLogprobs: readonly ArrayLike<number>[] | undefined;
  klCoefficient: number;
  klEstimator: KlEstimator;
  entropies: readonly ArrayLike<number>[] | undefined;
  entropyCoefficient: number;
  importanceWeights: readonly ArrayLike<number>[] | undefined;
  aggregation: LossAggregation;
  aggregationOptions: AggregateLossOptions | undefined;
};

function readInput(input: PolicyLossInput): Settings {
  if (input === null || typeof input !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'input',
      functionName: FN,
      value: input,
      expected: 'an input object',
    });
  }
  assertKnownKeys(input, {
    parameter: '',
    functionName: FN,
    known: [
      'logprobs',
      'oldLogprobs',
      'advantages',
      'mask',
      'ratioLevel',
      'epsilonLow',
      'epsilonHigh',
      'dualClip',
      'delta',
      'refLogprobs',
      'klCoefficient',
      'klEstimator',
      'entropies',
      'entropyCoefficient',
      'importanceWeights',
      'aggregation',
      'aggregationOptions',
    ],
  });
  const context = (parameter: string) => ({ parameter, functionName: FN });
  const logprobs = validateRagged(input.logprobs, context('logprobs'));
  const shape = { shapeOf: logprobs, shapeName: 'logprobs' };
  const oldLogprobs = validateRagged(input.oldLogprobs, { ...context('oldLogprobs'), ...shape });
  const mask =
    input.mask === undefined
      ? logprobs.map((row) => new Array<number>(row.length).fill(1))
      : validateRagged(input.mask, { ...context('mask'), ...shape });

  let advantageAt: Settings['advantageAt'];
  const rawAdvantages = input.advantages as unknown;
  if (
    Array.isArray(rawAdvantages) &&
    rawAdvantages.length > 0 &&
    isNumericArrayLike(rawAdvantages[0])
  ) {
    const perToken = validateRagged(rawAdvantages, { ...context('advantages'), ...shape });
    advantageAt = (sequence, index) => perToken[sequence]![index]!;
  } else {
    const perSequence = validateFiniteArray(rawAdvantages, {
      ...context('advantages'),
      length: logprobs.length,
    });
    advantageAt = (sequence) => perSequence[sequence]!;
  }

  const ratioLevel = validateOneOf(
    input.ratioLevel ?? 'token',
    ['token', 'sequence'],
    context('ratioLevel'),
  );
  const epsilonLow = validateNumber(input.epsilonLow ?? 0.2, {
    ...context('epsilonLow'),
    min: 0,
    max: 1,
  });
  const epsilonHigh = validateNumber(input.epsilonHigh ?? epsilonLow, {
    ...context('epsilonHigh'),
    min: 0,
  });
  const dualClip =
    input.dualClip === undefined
      ? undefined
      : validateNumber(input.dualClip, { ...context('dualClip'), min: 1, exclusiveMin: true });
  const delta =
    input.delta === undefined
      ? undefined
      : validateNumber(input.delta, {
          ...context('delta'),
          min: 1 + epsilonHigh,
          exclusiveMin: true,
        });
  const klCoefficient = validateNumber(input.klCoefficient ?? 0, {
    ...context('klCoefficient'),
    min: 0,
  });
  const klEstimator = validateOneOf(
    input.klEstimator ?? 'k3',
    ['k1', 'k2', 'k3', 'abs'],
    context('klEstimator'),
  );
  let refLogprobs: readonly ArrayLike<number>[] | undefined;
  if (input.refLogprobs !== undefined) {
    refLogprobs = validateRagged(input.refLogprobs, { ...context('refLogprobs'), ...shape });
  } else if (klCoefficient > 0) {
    throw new InvalidArgumentError({
      ...context('refLogprobs'),
      value: undefined,
      expected: 'reference logprobs when klCoefficient > 0',
    });
  }
  const entropyCoefficient = validateNumber(
    input.entropyCoefficient ?? 0,
    context('entropyCoefficient'),
  );
  let entropies: readonly ArrayLike<number>[] | undefined;
  if (input.entropies !== undefined) {
    entropies = validateRagged(input.entropies, { ...context('entropies'), ...shape });
  } else if (entropyCoefficient !== 0) {
    throw new InvalidArgumentError({
      ...context('entropies'),
      value: undefined,
      expected: 'per-token entropies when entropyCoefficient is not 0',
    });
  }
  const importanceWeights =
    input.importanceWeights === undefined
      ? undefined
      : validateRagged(input.importanceWeights, { ...context('importanceWeights'), ...shape });
  const aggregation = validateOneOf(
    input.aggregation ?? 'seq-mean-token-mean',
    LOSS_AGGREGATIONS,
    context('aggregation'),
  );
  return {
    logprobs,
    oldLogprobs,
    mask,
    advantageAt,
    ratioLevel,
    epsilonLow,
    epsilonHigh,
    dualClip,
    delta,
    refLogprobs,
    klCoefficient,
    klEstimator,
    entropies,
    entropyCoefficient,
    importanceWeights,
    aggregation,
    aggregationOptions: input.aggregationOptions,
  };
}
