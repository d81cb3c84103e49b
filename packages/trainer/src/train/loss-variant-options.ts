import {
  InvalidArgumentError,
  LOSS_AGGREGATIONS,
  LOSS_MODES,
  type LossMode,
  rejectIneffective,
  validateNumber,
  validateOneOf,
} from '@rlvr/core';
import { TRAINER_DEFAULTS } from '../defaults.js';

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
 * Validates the variants' own values (the combinations are {@link rejectIneffectiveVariants}'s)
 * and fills their defaults: `lossMode`, `topEntropyQuantile` and `useBiasCorrectionKl` always, the
 * SAPO temperatures with `lossMode: 'sapo'` (others keep what was given, for the check).
 * @internal
 */
export function resolveLossVariants(
  raw: LossVariantSettings,
  prefix: string,
  functionName: string,
): Required<Pick<LossVariantSettings, 'lossMode' | 'topEntropyQuantile' | 'useBiasCorrectionKl'>> &
  LossVariantSettings {
  const lossMode = validateOneOf(raw.lossMode ?? TRAINER_DEFAULTS.lossMode, LOSS_MODES, {
    parameter: `${prefix}lossMode`,
    functionName,
  });
  const temperature = (field: 'sapoTemperaturePos' | 'sapoTemperatureNeg') => {
    const value = raw[field] ?? (lossMode === 'sapo' ? TRAINER_DEFAULTS[field] : undefined);
    return value === undefined
      ? {}
      : {
          [field]: validateNumber(value, {
            parameter: `${prefix}${field}`,
            functionName,
            min: 0,
            exclusiveMin: true,
          }),
        };
  };
  const useBiasCorrectionKl = raw.useBiasCorrectionKl ?? TRAINER_DEFAULTS.useBiasCorrectionKl;
  if (typeof useBiasCorrectionKl !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: `${prefix}useBiasCorrectionKl`,
      functionName,
      value: useBiasCorrectionKl,
      expected: 'a boolean',
    });
  }
  return {
    lossMode,
    ...temperature('sapoTemperaturePos'),
    ...temperature('sapoTemperatureNeg'),
    topEntropyQuantile: validateNumber(
      raw.topEntropyQuantile ?? TRAINER_DEFAULTS.topEntropyQuantile,
      { parameter: `${prefix}topEntropyQuantile`, functionName, min: 0, max: 1 },
    ),
    ...(raw.offPolicyMaskThreshold === undefined
      ? {}
      : {
          offPolicyMaskThreshold: validateNumber(raw.offPolicyMaskThreshold, {
            parameter: `${prefix}offPolicyMaskThreshold`,
            functionName,
            min: 0,
          }),
        }),
    useBiasCorrectionKl,
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
