import {
  InvalidArgumentError,
  type KlEstimator,
  type LossAggregation,
  type MismatchMode,
  mismatchCorrection,
  policyLoss,
  type RatioLevel,
  rejectIneffective,
} from '@rlvr/core';
import {
  custom,
  number,
  type OptionsInput,
  object,
  optional,
  parseOptions,
  withDefault,
} from '@rlvr/options';
import { nullAsUnset, withoutUnsetNulls } from '../null-as-unset.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';
import {
  LOSS_VARIANT_FIELDS,
  rejectIneffectiveVariants,
  resolveLossVariants,
} from './loss-variant-options.js';

/** A setting @rlvr/core's loss math checks (its error, under the option's name). */
const checkedByCore = <T>(expected: string) => custom<T>(() => true, expected);
const given = (text: string) => ({ description: text, defaultText: 'off' });

/** The fields of a `mismatch` correction (checked by @rlvr/core's `mismatchCorrection`). @internal */
export const MISMATCH_FIELDS = {
  mode: optional(
    checkedByCore<MismatchMode>(
      "one of 'token-truncate', 'token-mask', 'sequence-truncate', 'sequence-mask'",
    ),
    {
      description: 'The correction: truncate (TIS) or mask, per token or per sequence.',
      defaultText: `\`'${TRAINER_DEFAULTS.mismatchMode}'\``,
    },
  ),
  cap: optional(checkedByCore<number>('a finite number >= 1'), {
    description: 'Upper bound of the importance ratio.',
    defaultText: "core's `MISMATCH_DEFAULTS.cap`",
  }),
  lowerThreshold: optional(checkedByCore<number>('a finite number in [0, 1]'), {
    description: 'The mask modes: ratios below it are masked too.',
    defaultText: "core's `MISMATCH_DEFAULTS.lowerThreshold` (mask modes)",
  }),
};

/**
 * ε_high, the dual clip and δ: checked by @rlvr/core's `policyLoss` (shared with `GrpoConfig`).
 * @internal
 */
export const CLIP_FIELDS = {
  epsilonHigh: nullAsUnset(
    optional(checkedByCore<number>('a finite number >= 0'), {
      description:
        "ε_high (DAPO 0.28) [`epsilon_high`]; `cispo` clips its weight at 1 + ε_high (TRL's `epsilon_high` for cispo is the cap itself: its recommended 5.0 is `epsilonHigh: 4`). Not with `sapo`.",
      defaultText: 'ε_low',
    }),
  ),
  dualClip: optional(
    checkedByCore<number>('a finite number > 1'),
    given('Dual-clip constant c > 1. `clip` only.'),
  ),
  delta: optional(
    checkedByCore<number>('a finite number > 1 + ε_high'),
    given('Two-sided clip δ > 1 + ε_high [`delta`]. `clip` only.'),
  ),
};

const MISMATCH =
  "Rollout↔trainer mismatch correction against the batch's `behaviourLogprobs` (TRL `vllm_importance_sampling_*`). `lowerThreshold` only with the mask modes.";

/** Old names, for the "did you mean" hint only (never accepted). */
const GRPO_ALIASES = {
  klCoefficient: 'beta',
  aggregation: 'lossAggregation',
  loss_type: 'lossAggregation',
  loss_mode: 'lossMode',
  tau_pos: 'sapoTemperaturePos',
  tau_neg: 'sapoTemperatureNeg',
} as const;

/**
 * The `grpo` option of `createPolicyTrainer` (the fields of @rlvr/core's `policyLoss`, TRL names
 * in brackets), declared once: {@link GrpoLossConfig}, the defaults ({@link TRAINER_DEFAULTS}),
 * the validation and the README table come from it. Settings core's `policyLoss` checks are
 * validated by it (see {@link resolveGrpoLoss}). @internal
 */
export const GRPO_LOSS_SCHEMA = object(
  {
    temperature: nullAsUnset(
      withDefault(
        number({ min: 0, exclusiveMin: true }),
        TRAINER_DEFAULTS.temperature,
        'Sampling temperature T [`temperature`]: every GRPO logprob (policy, π_old, reference) and entropy is `log softmax(logits / T)` over the whole vocabulary, so the ratio is on-policy for a sampler drawing at T.',
      ),
    ),
    ratioLevel: nullAsUnset(
      withDefault(
        checkedByCore<RatioLevel>("one of 'token', 'sequence'"),
        TRAINER_DEFAULTS.ratioLevel,
        '`sequence` is GSPO [`importance_sampling_level`].',
      ),
    ),
    lossMode: LOSS_VARIANT_FIELDS.lossMode,
    epsilonLow: nullAsUnset(
      withDefault(
        checkedByCore<number>('a finite number in [0, 1]'),
        TRAINER_DEFAULTS.epsilonLow,
        'ε_low [`epsilon`]; `cispo` clips its weight at 1 − ε_low too. Not with `sapo`.',
      ),
    ),
    ...CLIP_FIELDS,
    sapoTemperaturePos: LOSS_VARIANT_FIELDS.sapoTemperaturePos,
    sapoTemperatureNeg: LOSS_VARIANT_FIELDS.sapoTemperatureNeg,
    topEntropyQuantile: LOSS_VARIANT_FIELDS.topEntropyQuantile,
    offPolicyMaskThreshold: LOSS_VARIANT_FIELDS.offPolicyMaskThreshold,
    useBiasCorrectionKl: LOSS_VARIANT_FIELDS.useBiasCorrectionKl,
    beta: nullAsUnset(
      withDefault(
        checkedByCore<number>('a finite number >= 0'),
        TRAINER_DEFAULTS.beta,
        'β: KL coefficient to the reference policy (0: no reference model is created) [`beta`].',
      ),
    ),
    klEstimator: nullAsUnset(
      withDefault(
        checkedByCore<KlEstimator>("one of 'k1', 'k2', 'k3', 'abs'"),
        TRAINER_DEFAULTS.klEstimator,
        'KL estimator when β > 0.',
      ),
    ),
    entropyCoefficient: nullAsUnset(
      withDefault(
        checkedByCore<number>('a finite number'),
        TRAINER_DEFAULTS.entropyCoefficient,
        'η: entropy bonus weight.',
      ),
    ),
    lossAggregation: nullAsUnset(
      withDefault(
        checkedByCore<LossAggregation>("one of core's `LOSS_AGGREGATIONS`"),
        TRAINER_DEFAULTS.lossAggregation,
        "Loss aggregation (`token-mean` is TRL's `dapo`) [`loss_type`].",
      ),
    ),
    normalizer: optional(checkedByCore<number>('a finite number > 0'), {
      description:
        'Constant normalizer of `seq-mean-token-sum-norm` (e.g. maxNewTokens); only with that mode.',
      defaultText: '—',
    }),
    mismatch: optional(object(MISMATCH_FIELDS), given(MISMATCH)),
  },
  { aliases: GRPO_ALIASES },
);

/** The GRPO/PPO loss settings (see {@link GRPO_LOSS_SCHEMA} for each field). */
export type GrpoLossConfig = OptionsInput<typeof GRPO_LOSS_SCHEMA>;

/** {@link GrpoLossConfig} with its defaults filled in. @internal */
export type ResolvedGrpoLoss = Required<
  Pick<
    GrpoLossConfig,
    | 'temperature'
    | 'ratioLevel'
    | 'epsilonLow'
    | 'epsilonHigh'
    | 'beta'
    | 'klEstimator'
    | 'entropyCoefficient'
    | 'lossAggregation'
    | 'lossMode'
    | 'topEntropyQuantile'
    | 'useBiasCorrectionKl'
  >
> &
  Pick<
    GrpoLossConfig,
    | 'dualClip'
    | 'delta'
    | 'normalizer'
    | 'mismatch'
    | 'sapoTemperaturePos'
    | 'sapoTemperatureNeg'
    | 'offPolicyMaskThreshold'
  >;

/** Validates the `grpo` option and fills its defaults. @internal */
export function resolveGrpoLoss(value: unknown, functionName: string): ResolvedGrpoLoss {
  const parsed = parseOptions(GRPO_LOSS_SCHEMA, withoutUnsetNulls(GRPO_LOSS_SCHEMA, value), {
    parameter: 'options.grpo',
    functionName,
  });
  const raw = (value ?? {}) as GrpoLossConfig;
  const grpo: ResolvedGrpoLoss = {
    ...raw,
    ...resolveLossVariants(parsed),
    temperature: parsed.temperature,
    ratioLevel: parsed.ratioLevel,
    epsilonLow: parsed.epsilonLow,
    epsilonHigh: raw.epsilonHigh ?? parsed.epsilonLow,
    beta: parsed.beta,
    klEstimator: parsed.klEstimator,
    entropyCoefficient: parsed.entropyCoefficient,
    lossAggregation: parsed.lossAggregation,
  };
  rejectIneffectiveVariants(raw, grpo.beta, 'options.grpo.', functionName);
  checkWithCore(grpo, functionName);
  rejectIneffectiveLoss(raw, grpo, functionName);
  return grpo;
}

/** Lets core validate the loss settings once, on a one-token batch. */
function checkWithCore(grpo: ResolvedGrpoLoss, functionName: string): void {
  try {
    policyLoss({
      logprobs: [[-1]],
      oldLogprobs: [[-1]],
      advantages: [0],
      ratioLevel: grpo.ratioLevel,
      ...corePolicySettings(grpo),
      klCoefficient: grpo.beta,
      klEstimator: grpo.klEstimator,
      refLogprobs: [[-1]],
      entropies: [[0]],
      entropyCoefficient: grpo.entropyCoefficient,
      aggregation: grpo.lossAggregation,
      aggregationOptions:
        grpo.normalizer === undefined ? undefined : { normalizer: grpo.normalizer },
    });
    if (grpo.mismatch !== undefined) {
      mismatchCorrection({ trainerLogprobs: [[-1]], behaviourLogprobs: [[-1]], ...grpo.mismatch });
    }
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      const field = error.parameter
        .replace(/^options\./, '')
        .replace(/^klCoefficient$/, 'beta')
        .replace(/^aggregation$/, 'lossAggregation');
      const isMismatch = ['mode', 'cap', 'lowerThreshold'].includes(field);
      throw new InvalidArgumentError({
        parameter: `options.grpo.${isMismatch ? 'mismatch.' : ''}${field}`,
        functionName,
        value: error.value,
        expected: error.message.replace(/^.*expected /, '').replace(/, got .*$/, ''),
        code: error.code,
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * The `policyLoss` settings of the policy term for `grpo`'s `lossMode` (what it reads: ε only for
 * `clip` / `cispo`, the SAPO temperatures only for `sapo`), the off-policy mask's δ and the KL
 * correction. @internal
 */
export function corePolicySettings(grpo: ResolvedGrpoLoss) {
  const given = <K extends keyof ResolvedGrpoLoss>(keys: readonly K[]) =>
    Object.fromEntries(
      keys.filter((key) => grpo[key] !== undefined).map((key) => [key, grpo[key]]),
    );
  return {
    lossMode: grpo.lossMode,
    ...(grpo.lossMode === 'sapo'
      ? given(['sapoTemperaturePos', 'sapoTemperatureNeg'])
      : { epsilonLow: grpo.epsilonLow, epsilonHigh: grpo.epsilonHigh }),
    ...given(['dualClip', 'delta', 'offPolicyMaskThreshold']),
    useBiasCorrectionKl: grpo.useBiasCorrectionKl,
  } as Pick<
    Parameters<typeof policyLoss>[0],
    | 'lossMode'
    | 'epsilonLow'
    | 'epsilonHigh'
    | 'dualClip'
    | 'delta'
    | 'sapoTemperaturePos'
    | 'sapoTemperatureNeg'
    | 'offPolicyMaskThreshold'
    | 'useBiasCorrectionKl'
  >;
}

/** Options that do nothing in the chosen combination are errors (`INEFFECTIVE_OPTION`). */
function rejectIneffectiveLoss(
  raw: Partial<GrpoLossConfig>,
  grpo: ResolvedGrpoLoss,
  functionName: string,
): void {
  if (raw.normalizer !== undefined && grpo.lossAggregation !== 'seq-mean-token-sum-norm') {
    rejectIneffective({
      parameter: 'options.grpo.normalizer',
      value: raw.normalizer,
      because: `it is used only by lossAggregation 'seq-mean-token-sum-norm' (this one is '${grpo.lossAggregation}')`,
      functionName,
    });
  }
  if (raw.klEstimator !== undefined && grpo.beta === 0) {
    rejectIneffective({
      parameter: 'options.grpo.klEstimator',
      value: raw.klEstimator,
      because: 'grpo.beta is 0 (no KL term)',
      functionName,
    });
  }
  const mode = grpo.mismatch?.mode ?? TRAINER_DEFAULTS.mismatchMode;
  if (grpo.mismatch?.lowerThreshold !== undefined && !mode.endsWith('-mask')) {
    rejectIneffective({
      parameter: 'options.grpo.mismatch.lowerThreshold',
      value: grpo.mismatch.lowerThreshold,
      because: `only the mask modes reject low ratios (mode is '${mode}')`,
      functionName,
    });
  }
}
