import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { assertKnownKeys, rejectIneffective } from '../validation/options.js';
import {
  isNumericArrayLike,
  validateFiniteArray,
  validateNumber,
  validateOneOf,
  validateRagged,
} from '../validation/validate.js';
import {
  type AggregateLossOptions,
  LOSS_AGGREGATIONS,
  type LossAggregation,
} from './aggregate-loss.js';
import type { KlEstimator } from './kl.js';

/** `token`: one ratio per token (PPO/GRPO); `sequence`: the length-normalized sequence ratio (GSPO). */
export type RatioLevel = 'token' | 'sequence';

/**
 * The policy-gradient term per token (verl's `policy_loss.loss_mode`; TRL folds these into
 * `loss_type`), with r the importance ratio and A the advantage:
 * - `clip` (PPO/GRPO/DAPO): `max(−A·min(r, δ), −A·clip(r, 1 − ε_low, 1 + ε_high))`, dual clip,
 * - `cispo` (MiniMax-M1): `−sg(clip(r, 1 − ε_low, 1 + ε_high))·A·log π`: the clipped ratio is a
 *   stop-gradient weight, so every token keeps a gradient `−A·clip(r)`,
 * - `sapo` (Soft Adaptive Policy Optimization): `−A·σ(τ(r − 1))·4/τ`, τ = `sapoTemperaturePos`
 *   for A > 0 and `sapoTemperatureNeg` otherwise: a smooth gate in place of the hard clip, whose
 *   gradient `−A·4σ(1 − σ)·r` is PPO's at r = 1 and decays away from it.
 */
export type LossMode = 'clip' | 'cispo' | 'sapo';

/** Every {@link LossMode}. */
export const LOSS_MODES: readonly LossMode[] = ['clip', 'cispo', 'sapo'];

/**
 * What {@link policyLoss} uses for an omitted `lossMode` and SAPO temperatures (TRL's
 * `sapo_temperature_pos` 1.0 and `sapo_temperature_neg` 1.05, the SAPO paper's, verl's `tau_pos` /
 * `tau_neg`). Layers that fill or show these settings read them from here.
 */
export const POLICY_LOSS_DEFAULTS = Object.freeze({
  lossMode: 'clip',
  sapoTemperaturePos: 1,
  sapoTemperatureNeg: 1.05,
} as const satisfies {
  lossMode: LossMode;
  sapoTemperaturePos: number;
  sapoTemperatureNeg: number;
});

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
  /** The policy-gradient term (default `clip`); see {@link LossMode}. */
  lossMode?: LossMode;
  /**
   * Lower clip ε_low: ratio ≥ 1 − ε_low (`clip`, `cispo`). Default 0.2. `cispo` with no lower bound
   * (MiniMax-M1's setting) is `epsilonLow: 1`. Not with `sapo`.
   */
  epsilonLow?: number;
  /**
   * Upper clip ε_high (clip-higher, DAPO: 0.28): ratio ≤ 1 + ε_high. Default = epsilonLow. TRL's
   * `epsilon_high` for `loss_type='cispo'` is the ratio cap itself (ScaleRL's ε_max = 5): ours is
   * 1 + ε_high, so ε_max 5 is `epsilonHigh: 4`. Not with `sapo`.
   */
  epsilonHigh?: number;
  /** Dual-clip constant c > 1: for A < 0 the loss is at most −A·c (verl `clip_ratio_c`, e.g. 3). `clip` only. */
  dualClip?: number;
  /** Two-sided clip δ > 1 + ε_high: the unclipped ratio is capped at δ (TRL `delta`, INTELLECT-2). `clip` only. */
  delta?: number;
  /** SAPO's gate temperature τ for A > 0 (default 1). `sapo` only. */
  sapoTemperaturePos?: number;
  /** SAPO's gate temperature τ for A ≤ 0 (default 1.05). `sapo` only. */
  sapoTemperatureNeg?: number;
  /** Frozen reference logprobs; needed when `klCoefficient` > 0. */
  refLogprobs?: readonly ArrayLike<number>[];
  /** β: weight of the per-token KL penalty added to the loss. Default 0 (no reference needed). */
  klCoefficient?: number;
  /** Default `k3`. */
  klEstimator?: KlEstimator;
  /**
   * DeepSeek-V3.2's bias-corrected KL (TRL `use_bias_correction_kl`): the per-token KL estimate
   * is multiplied by the importance ratio π_θ/π_old (the token ratio, or the GSPO sequence ratio),
   * with the gradient through it, so its gradient is unbiased under π_old's samples (for k3:
   * `r·(logp − refLogp)`). Default false; only with `klCoefficient` > 0.
   */
  useBiasCorrectionKl?: boolean;
  /**
   * DeepSeek-V3.2's off-policy sequence masking δ (TRL `off_policy_mask_threshold`): a sequence's
   * tokens with A < 0 lose their policy term when the sequence's mean (over its unmasked tokens)
   * of `behaviourLogprobs − logprobs` exceeds δ. The mask is a constant (no gradient through it);
   * the KL term stays. Default: off.
   */
  offPolicyMaskThreshold?: number;
  /** The sampling policy's logprobs for the off-policy mask (default `oldLogprobs`). */
  behaviourLogprobs?: readonly ArrayLike<number>[];
  /**
   * A per-token selection of the policy term and the entropy bonus (1 = kept, 0 = no policy
   * gradient), e.g. {@link highEntropyMask}'s top-ρ entropy tokens (TRL `top_entropy_quantile`).
   * The aggregation's counts and the KL term are unchanged (as in TRL).
   */
  entropyMask?: readonly ArrayLike<number>[];
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

/** The validated input with its defaults. @internal */
export type PolicyLossSettings = {
  logprobs: readonly ArrayLike<number>[];
  oldLogprobs: readonly ArrayLike<number>[];
  mask: readonly ArrayLike<number>[];
  advantageAt: (sequence: number, index: number) => number;
  ratioLevel: RatioLevel;
  lossMode: LossMode;
  epsilonLow: number;
  epsilonHigh: number;
  dualClip: number | undefined;
  delta: number | undefined;
  sapoTemperaturePos: number;
  sapoTemperatureNeg: number;
  refLogprobs: readonly ArrayLike<number>[] | undefined;
  klCoefficient: number;
  klEstimator: KlEstimator;
  useBiasCorrectionKl: boolean;
  offPolicyMaskThreshold: number | undefined;
  behaviourLogprobs: readonly ArrayLike<number>[] | undefined;
  entropyMask: readonly ArrayLike<number>[] | undefined;
  entropies: readonly ArrayLike<number>[] | undefined;
  entropyCoefficient: number;
  importanceWeights: readonly ArrayLike<number>[] | undefined;
  aggregation: LossAggregation;
  aggregationOptions: AggregateLossOptions | undefined;
};

const FN = 'policyLoss';

const KNOWN_KEYS = [
  'logprobs',
  'oldLogprobs',
  'advantages',
  'mask',
  'ratioLevel',
  'lossMode',
  'epsilonLow',
  'epsilonHigh',
  'dualClip',
  'delta',
  'sapoTemperaturePos',
  'sapoTemperatureNeg',
  'refLogprobs',
  'klCoefficient',
  'klEstimator',
  'useBiasCorrectionKl',
  'offPolicyMaskThreshold',
  'behaviourLogprobs',
  'entropyMask',
  'entropies',
  'entropyCoefficient',
  'importanceWeights',
  'aggregation',
  'aggregationOptions',
] as const;

const context = (parameter: string) => ({ parameter, functionName: FN });

/** Validates {@link PolicyLossInput} and fills its defaults. @internal */
export function readPolicyLossInput(input: PolicyLossInput): PolicyLossSettings {
  if (input === null || typeof input !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'input',
      functionName: FN,
      value: input,
      expected: 'an input object',
    });
  }
  assertKnownKeys(input, { parameter: '', functionName: FN, known: KNOWN_KEYS });
  const logprobs = validateRagged(input.logprobs, context('logprobs'));
  const shape = { shapeOf: logprobs, shapeName: 'logprobs' };
  const ragged = (name: keyof PolicyLossInput) =>
    input[name] === undefined
      ? undefined
      : validateRagged(input[name], { ...context(name), ...shape });
  const oldLogprobs = validateRagged(input.oldLogprobs, { ...context('oldLogprobs'), ...shape });
  const mask = ragged('mask') ?? logprobs.map((row) => new Array<number>(row.length).fill(1));
  const lossMode = validateOneOf(
    input.lossMode ?? POLICY_LOSS_DEFAULTS.lossMode,
    LOSS_MODES,
    context('lossMode'),
  );
  rejectModeMismatches(input, lossMode);
  const clip = readClip(input);
  const kl = readKl(input, ragged('refLogprobs'));
  const offPolicyMaskThreshold =
    input.offPolicyMaskThreshold === undefined
      ? undefined
      : validateNumber(input.offPolicyMaskThreshold, {
          ...context('offPolicyMaskThreshold'),
          min: 0,
        });
  const behaviourLogprobs = ragged('behaviourLogprobs');
  if (behaviourLogprobs !== undefined && offPolicyMaskThreshold === undefined) {
    rejectIneffective({
      ...context('behaviourLogprobs'),
      value: '(logprobs)',
      because: 'they are read only by the off-policy mask (offPolicyMaskThreshold is not set)',
    });
  }
  const entropyMask = ragged('entropyMask');
  entropyMask?.forEach((row, sequence) => {
    for (let index = 0; index < row.length; index++) {
      if (row[index]! < 0) {
        throw new InvalidArgumentError({
          ...context(`entropyMask[${sequence}][${index}]`),
          value: row[index],
          expected: 'a non-negative weight (1 = kept, 0 = no policy gradient)',
        });
      }
    }
  });
  const entropyCoefficient = validateNumber(
    input.entropyCoefficient ?? 0,
    context('entropyCoefficient'),
  );
  const entropies = ragged('entropies');
  if (entropies === undefined && entropyCoefficient !== 0) {
    throw new InvalidArgumentError({
      ...context('entropies'),
      value: undefined,
      expected: 'per-token entropies when entropyCoefficient is not 0',
    });
  }
  return {
    logprobs,
    oldLogprobs,
    mask,
    advantageAt: readAdvantages(input.advantages, logprobs, shape),
    ratioLevel: validateOneOf(
      input.ratioLevel ?? 'token',
      ['token', 'sequence'],
      context('ratioLevel'),
    ),
    lossMode,
    ...clip,
    sapoTemperaturePos: validateNumber(
      input.sapoTemperaturePos ?? POLICY_LOSS_DEFAULTS.sapoTemperaturePos,
      { ...context('sapoTemperaturePos'), min: 0, exclusiveMin: true },
    ),
    sapoTemperatureNeg: validateNumber(
      input.sapoTemperatureNeg ?? POLICY_LOSS_DEFAULTS.sapoTemperatureNeg,
      { ...context('sapoTemperatureNeg'), min: 0, exclusiveMin: true },
    ),
    ...kl,
    offPolicyMaskThreshold,
    behaviourLogprobs,
    entropyMask,
    entropies,
    entropyCoefficient,
    importanceWeights: ragged('importanceWeights'),
    aggregation: validateOneOf(
      input.aggregation ?? 'seq-mean-token-mean',
      LOSS_AGGREGATIONS,
      context('aggregation'),
    ),
    aggregationOptions: input.aggregationOptions,
  };
}

/** `INEFFECTIVE_OPTION` for settings the chosen {@link LossMode} does not read. */
function rejectModeMismatches(input: PolicyLossInput, lossMode: LossMode): void {
  const because: Record<LossMode, Partial<Record<keyof PolicyLossInput, string>>> = {
    clip: {
      sapoTemperaturePos: "it is the gate temperature of lossMode 'sapo' (this one is 'clip')",
      sapoTemperatureNeg: "it is the gate temperature of lossMode 'sapo' (this one is 'clip')",
    },
    cispo: {
      dualClip:
        "lossMode 'cispo' clips the importance weight itself: there is no unclipped surrogate for a dual clip to cap",
      delta:
        "lossMode 'cispo' clips the importance weight on both sides (1 − ε_low, 1 + ε_high): there is no unclipped ratio for δ to cap",
      sapoTemperaturePos: "it is the gate temperature of lossMode 'sapo' (this one is 'cispo')",
      sapoTemperatureNeg: "it is the gate temperature of lossMode 'sapo' (this one is 'cispo')",
    },
    sapo: Object.fromEntries(
      (['epsilonLow', 'epsilonHigh', 'dualClip', 'delta'] as const).map((name) => [
        name,
        "lossMode 'sapo' replaces the hard clip with its soft gate (sapoTemperaturePos / sapoTemperatureNeg)",
      ]),
    ),
  };
  for (const [name, reason] of Object.entries(because[lossMode])) {
    const value = input[name as keyof PolicyLossInput];
    if (value !== undefined) rejectIneffective({ ...context(name), value, because: reason });
  }
}

function readClip(input: PolicyLossInput) {
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
  return { epsilonLow, epsilonHigh, dualClip, delta };
}

function readKl(input: PolicyLossInput, refLogprobs: readonly ArrayLike<number>[] | undefined) {
  const klCoefficient = validateNumber(input.klCoefficient ?? 0, {
    ...context('klCoefficient'),
    min: 0,
  });
  const klEstimator = validateOneOf(
    input.klEstimator ?? 'k3',
    ['k1', 'k2', 'k3', 'abs'],
    context('klEstimator'),
  );
  if (refLogprobs === undefined && klCoefficient > 0) {
    throw new InvalidArgumentError({
      ...context('refLogprobs'),
      value: undefined,
      expected: 'reference logprobs when klCoefficient > 0',
    });
  }
  const useBiasCorrectionKl = input.useBiasCorrectionKl ?? false;
  if (typeof useBiasCorrectionKl !== 'boolean') {
    throw new InvalidArgumentError({
      ...context('useBiasCorrectionKl'),
      value: useBiasCorrectionKl,
      expected: 'a boolean',
    });
  }
  if (useBiasCorrectionKl && klCoefficient === 0) {
    rejectIneffective({
      ...context('useBiasCorrectionKl'),
      value: true,
      because: 'klCoefficient is 0 (no KL term to correct)',
    });
  }
  return { refLogprobs, klCoefficient, klEstimator, useBiasCorrectionKl };
}

function readAdvantages(
  raw: unknown,
  logprobs: readonly ArrayLike<number>[],
  shape: { shapeOf: readonly ArrayLike<number>[]; shapeName: string },
): PolicyLossSettings['advantageAt'] {
  if (Array.isArray(raw) && raw.length > 0 && isNumericArrayLike(raw[0])) {
    const perToken = validateRagged(raw, { ...context('advantages'), ...shape });
    return (sequence, index) => perToken[sequence]![index]!;
  }
  const perSequence = validateFiniteArray(raw, {
    ...context('advantages'),
    length: logprobs.length,
  });
  return (sequence) => perSequence[sequence]!;
}
