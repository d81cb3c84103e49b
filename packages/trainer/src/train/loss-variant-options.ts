import {
  InvalidArgumentError,
  LOSS_AGGREGATIONS,
  LOSS_MODES,
  type LossMode,
  rejectIneffective,
  validateOneOf,
} from '@rlvr/core';
import { boolean, number, oneOf, optional, withDefault } from '@rlvr/options';
import { nullAsUnset } from '../null-as-unset.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';

const sapoOnly = (value: number) => `\`${value}\` (with \`lossMode: 'sapo'\`)`;

/**
 * The fields of the 2025–26 policy-loss variants, shared by `GrpoConfig` and
 * `createPolicyTrainer`'s `grpo` (TRL's `GRPOConfig` names in brackets): their declaration,
 * defaults ({@link TRAINER_DEFAULTS}) and checks. @internal
 */
export const LOSS_VARIANT_FIELDS = {
  lossMode: nullAsUnset(
    withDefault(
      oneOf(LOSS_MODES as unknown as readonly [LossMode, ...LossMode[]]),
      TRAINER_DEFAULTS.lossMode,
      "The policy-gradient term: `clip` is PPO/GRPO/DAPO's clipped surrogate, `cispo` MiniMax-M1's (the clipped ratio as a stop-gradient weight on −A·log π: every token keeps a gradient), `sapo` the soft gate `σ(τ(r − 1))·4/τ` [TRL `loss_type: 'cispo' | 'sapo'`; verl `policy_loss.loss_mode`]. A dual clip or δ with `cispo`, and ε, δ or the dual clip with `sapo`, are `INEFFECTIVE_OPTION`.",
    ),
  ),
  sapoTemperaturePos: nullAsUnset(
    optional(number({ min: 0, exclusiveMin: true }), {
      description: "SAPO's gate temperature for A > 0 [`sapo_temperature_pos`]. `sapo` only.",
      defaultText: sapoOnly(TRAINER_DEFAULTS.sapoTemperaturePos),
    }),
  ),
  sapoTemperatureNeg: nullAsUnset(
    optional(number({ min: 0, exclusiveMin: true }), {
      description: "SAPO's gate temperature for A ≤ 0 [`sapo_temperature_neg`]. `sapo` only.",
      defaultText: sapoOnly(TRAINER_DEFAULTS.sapoTemperatureNeg),
    }),
  ),
  topEntropyQuantile: nullAsUnset(
    withDefault(
      number({ min: 0, max: 1 }),
      TRAINER_DEFAULTS.topEntropyQuantile,
      'ρ of "Beyond the 80/20 Rule" (1: every token; the paper: 0.2) [`top_entropy_quantile`]: the policy term (and the entropy bonus) only on the tokens whose entropy is ≥ the (1 − ρ)-quantile of the mini-batch\'s unmasked tokens, measured with the pre-update policy (π_old).',
    ),
  ),
  offPolicyMaskThreshold: optional(number({ min: 0 }), {
    description:
      "δ of DeepSeek-V3.2's off-policy sequence masking [`off_policy_mask_threshold`, e.g. 0.5]: a sequence's tokens with A < 0 lose their policy term when its mean `behaviourLogprob − logprob` exceeds δ (the KL term stays).",
    defaultText: 'off',
  }),
  useBiasCorrectionKl: nullAsUnset(
    withDefault(
      boolean(),
      TRAINER_DEFAULTS.useBiasCorrectionKl,
      "DeepSeek-V3.2's bias-corrected KL: the per-token KL estimate times the importance ratio π_θ/π_old [`use_bias_correction_kl`]; with β = 0 it is `INEFFECTIVE_OPTION`.",
    ),
  ),
};

/**
 * The 2025–26 policy-loss variants' settings, as `GrpoConfig` and `createPolicyTrainer`'s `grpo`
 * share them (TRL's `GRPOConfig` names in brackets). @internal
 */
export type LossVariantSettings = {
  lossMode?: LossMode;
  sapoTemperaturePos?: number;
  sapoTemperatureNeg?: number;
  topEntropyQuantile?: number;
  offPolicyMaskThreshold?: number;
  useBiasCorrectionKl?: boolean;
};

/** The settings a loss variant checks besides its own. @internal */
type Neighbours = {
  epsilonLow?: number;
  epsilonHigh?: number;
  dualClip?: number;
  delta?: number;
};

/**
 * The first setting of `raw` that the chosen `lossMode` (or β) does not read: `INEFFECTIVE_OPTION`
 * naming it under `prefix` (`options.grpo.` or `config.`). A dual clip or δ with `cispo` (CISPO
 * clips the importance weight itself: nothing unclipped is left to cap), ε / δ / the dual clip with
 * `sapo` (its soft gate replaces the clip), SAPO temperatures without `sapo`,
 * `useBiasCorrectionKl` at β = 0. @internal
 */
export function rejectIneffectiveVariants(
  raw: LossVariantSettings & Neighbours,
  beta: number,
  prefix: string,
  functionName: string,
): void {
  const lossMode = raw.lossMode ?? TRAINER_DEFAULTS.lossMode;
  const reject = (field: keyof (LossVariantSettings & Neighbours), because: string) => {
    if (raw[field] !== undefined) {
      rejectIneffective({
        parameter: `${prefix}${field}`,
        value: raw[field],
        because,
        functionName,
      });
    }
  };
  if (lossMode === 'cispo') {
    const because = `lossMode 'cispo' clips the importance weight itself (to [1 − ε_low, 1 + ε_high]): no unclipped surrogate is left to cap`;
    reject('dualClip', because);
    reject('delta', because);
  }
  if (lossMode === 'sapo') {
    const because = `lossMode 'sapo' replaces the hard clip with its soft gate (${prefix}sapoTemperaturePos / sapoTemperatureNeg)`;
    for (const field of ['epsilonLow', 'epsilonHigh', 'dualClip', 'delta'] as const) {
      reject(field, because);
    }
  } else {
    const because = `it is the gate temperature of lossMode 'sapo' (this one is '${lossMode}')`;
    reject('sapoTemperaturePos', because);
    reject('sapoTemperatureNeg', because);
  }
  if (raw.useBiasCorrectionKl === true && beta === 0) {
    reject('useBiasCorrectionKl', `${prefix}beta is 0 (no KL term to correct)`);
  }
}

/**
 * The variants' settings with their defaults (validated by {@link LOSS_VARIANT_FIELDS}; the
 * combinations are {@link rejectIneffectiveVariants}'s): `lossMode`, `topEntropyQuantile` and
 * `useBiasCorrectionKl` always, the SAPO temperatures with `lossMode: 'sapo'` (others keep what
 * was given, for the check). @internal
 */
export function resolveLossVariants(
  parsed: Required<
    Pick<LossVariantSettings, 'lossMode' | 'topEntropyQuantile' | 'useBiasCorrectionKl'>
  > &
    LossVariantSettings,
): Required<Pick<LossVariantSettings, 'lossMode' | 'topEntropyQuantile' | 'useBiasCorrectionKl'>> &
  LossVariantSettings {
  const { lossMode, offPolicyMaskThreshold } = parsed;
  const temperature = (field: 'sapoTemperaturePos' | 'sapoTemperatureNeg') => {
    const value = parsed[field] ?? (lossMode === 'sapo' ? TRAINER_DEFAULTS[field] : undefined);
    return value === undefined ? {} : { [field]: value };
  };
  return {
    lossMode,
    ...temperature('sapoTemperaturePos'),
    ...temperature('sapoTemperatureNeg'),
    topEntropyQuantile: parsed.topEntropyQuantile,
    ...(offPolicyMaskThreshold === undefined ? {} : { offPolicyMaskThreshold }),
    useBiasCorrectionKl: parsed.useBiasCorrectionKl,
  };
}

/**
 * TRL's `loss_type` values and what each is here: the aggregation, and for `cispo` / `sapo` the
 * `lossMode` too (TRL aggregates `cispo` as `dapo`, `sapo` as `grpo`). `bnpo` normalizes by the
 * tokens of each *local* (micro-)batch, so in TRL it depends on `per_device_train_batch_size`; ours
 * always divides by the mini-batch's tokens (the update does not depend on `microBatchSize`),
 * which is `bnpo` and `dapo` alike when the mini-batch is one micro-batch. @internal
 */
export const TRL_LOSS_TYPES: Readonly<Record<string, string>> = {
  grpo: "'seq-mean-token-mean'",
  dapo: "'token-mean'",
  bnpo: "'token-mean'",
  dr_grpo: "'seq-mean-token-sum-norm'",
  cispo: "'token-mean' with lossMode: 'cispo'",
  sapo: "'seq-mean-token-mean' with lossMode: 'sapo'",
};

/**
 * `lossAggregation` validated with a hint for TRL's `loss_type` values (`'dapo'` → `'token-mean'`).
 * @internal
 */
export function validateLossAggregation(value: unknown, parameter: string, functionName: string) {
  const hint = typeof value === 'string' ? TRL_LOSS_TYPES[value] : undefined;
  if (hint !== undefined) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: `one of ${LOSS_AGGREGATIONS.map((mode) => `'${mode}'`).join(', ')} ('${value}' is TRL's loss_type for ${hint})`,
    });
  }
  return validateOneOf(value, LOSS_AGGREGATIONS, { parameter, functionName });
}
