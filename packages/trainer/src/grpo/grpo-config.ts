import type { LossAggregation, RatioLevel } from '@rlvr/core';
import {
  boolean,
  custom,
  defineOptions,
  expecting,
  integer,
  number,
  type OptionsInput,
  object,
  oneOf,
  optional,
  required,
  text,
  withDefault,
  zod,
} from '@rlvr/options';
import { nullAsUnset } from '../null-as-unset.js';
import { OPTIMIZER_DOC } from '../optim/optimizer-options.js';
import { SCHEDULE_FIELDS } from '../optim/schedule.js';
import { CLIP_FIELDS, MISMATCH_FIELDS } from '../train/grpo-loss-options.js';
import type { LoraOptions } from '../train/lora-options.js';
import { LOSS_VARIANT_FIELDS } from '../train/loss-variant-options.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';
import { CONFIG_ALIASES } from './config-aliases.js';
import { DEFAULT_MAX_TURNS } from './environment-options.js';

/** A setting the policy trainer checks (`createPolicyTrainer`'s error, under the config's name). */
const checkedByTrainer = <T>(expected: string) => custom<T>(() => true, expected);
/** Where `outputDir` is not set, this setting is `INEFFECTIVE_OPTION`. */
const WRITTEN = 'Without `outputDir` it is `INEFFECTIVE_OPTION`.';
const off = (description: string) => ({ description, defaultText: 'off' });
const OVERLONG = 'valid soft-overlong settings (maxLength ≥ bufferLength ≥ 1, penaltyFactor ≥ 0)';
const isStop = (value: unknown) =>
  Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '');

/** The `dynamicSampling` settings (`true` is all of their defaults). @internal */
export const DYNAMIC_SAMPLING_SCHEMA = object(
  {
    minStd: nullAsUnset(
      withDefault(number({ min: 0 }), 1e-6, 'Groups whose reward std is ≤ this are dropped.'),
    ),
    maxRounds: nullAsUnset(withDefault(integer({ min: 1 }), 3, 'Most sampling rounds per step.')),
  },
  { aliases: { maxResampleRounds: 'maxRounds', rounds: 'maxRounds', std: 'minStd' } },
);

/**
 * The settings of a {@link GrpoTrainer} run, declared once: {@link GrpoConfig},
 * {@link GRPO_CONFIG_KEYS}, the defaults ({@link TRAINER_DEFAULTS}, shared with
 * `createPolicyTrainer`, and the run's own), the validation and the README table come from it.
 * Named after TRL's `GRPOConfig` where one exists (TRL's name in brackets). Settings the policy
 * trainer checks (loss clip values, optimizer, LoRA, memory) are validated by it, under the
 * config's names; cross-field rules are in `resolveGrpoConfig`.
 */
export const GRPO_CONFIG = defineOptions(
  {
    maxSteps: required(
      integer({ min: 1 }),
      'Generation steps to run (each: sample, score, one `grpoStep`) [`max_steps`]. May change on resume (extending a run is normal); it is not part of the settings fingerprint.',
    ),
    promptsPerStep: nullAsUnset(
      withDefault(integer({ min: 1 }), 4, 'Prompts per generation step.'),
    ),
    groupSize: nullAsUnset(
      withDefault(
        integer({ min: 2 }),
        TRAINER_DEFAULTS.groupSize,
        'G: completions per prompt [`num_generations`].',
      ),
    ),
    seed: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        0,
        'Seed of the data order and of every sampler request [`seed`].',
      ),
    ),
    shuffle: withDefault(boolean(), true, 'Shuffle the dataset each epoch.'),
    maxNewTokens: required(
      integer({ min: 1 }),
      'Hard cap on generated tokens [`max_completion_length`].',
    ),
    temperature: nullAsUnset(
      withDefault(
        number({ min: 0, exclusiveMin: true }),
        TRAINER_DEFAULTS.temperature,
        "Sampling temperature [`temperature`]. The trainer's logprobs are `log softmax(logits / temperature)`, the distribution the sampler drew from, so a run at T ≠ 1 stays on-policy.",
      ),
    ),
    topP: optional(
      number({ min: 0, exclusiveMin: true, max: 1 }),
      off('Nucleus sampling [`top_p`].'),
    ),
    topK: optional(integer({ min: 0 }), off('Top-k sampling [`top_k`].')),
    minP: optional(number({ min: 0, max: 1 }), off('Min-p sampling [`min_p`].')),
    repetitionPenalty: optional(
      number({ min: 0, exclusiveMin: true }),
      off('Repetition penalty [`repetition_penalty`].'),
    ),
    stop: optional(
      custom<readonly string[]>(isStop, 'an array of non-empty strings'),
      off('Stop strings.'),
    ),
    beta: nullAsUnset(
      withDefault(
        number({ min: 0 }),
        TRAINER_DEFAULTS.beta,
        'β: KL coefficient to the frozen initial policy (0: no reference model) [`beta`].',
      ),
    ),
    klEstimator: nullAsUnset(
      withDefault(
        oneOf(['k1', 'k2', 'k3', 'abs']),
        TRAINER_DEFAULTS.klEstimator,
        'KL estimator. Setting it with β = 0 is `INEFFECTIVE_OPTION`.',
      ),
    ),
    useBiasCorrectionKl: LOSS_VARIANT_FIELDS.useBiasCorrectionKl,
    lossMode: LOSS_VARIANT_FIELDS.lossMode,
    epsilonLow: nullAsUnset(
      withDefault(
        number({ min: 0 }),
        TRAINER_DEFAULTS.epsilonLow,
        "ε_low [`epsilon`]; with `cispo` the weight's lower bound 1 − ε_low (MiniMax-M1 sets none: `epsilonLow: 1`).",
      ),
    ),
    epsilonHigh: CLIP_FIELDS.epsilonHigh,
    delta: CLIP_FIELDS.delta,
    dualClip: CLIP_FIELDS.dualClip,
    sapoTemperaturePos: LOSS_VARIANT_FIELDS.sapoTemperaturePos,
    sapoTemperatureNeg: LOSS_VARIANT_FIELDS.sapoTemperatureNeg,
    topEntropyQuantile: LOSS_VARIANT_FIELDS.topEntropyQuantile,
    offPolicyMaskThreshold: LOSS_VARIANT_FIELDS.offPolicyMaskThreshold,
    ratioLevel: nullAsUnset(
      optional(checkedByTrainer<RatioLevel>("one of 'token', 'sequence'"), {
        description: 'Token or sequence (GSPO) ratios [`importance_sampling_level`].',
        defaultText: `\`'${TRAINER_DEFAULTS.ratioLevel}'\``,
      }),
    ),
    entropyCoefficient: nullAsUnset(
      optional(checkedByTrainer<number>('a finite number'), {
        description: 'η: entropy bonus.',
        defaultText: `\`${TRAINER_DEFAULTS.entropyCoefficient}\``,
      }),
    ),
    lossAggregation: nullAsUnset(
      withDefault(
        checkedByTrainer<LossAggregation>(
          "one of core's `LOSS_AGGREGATIONS` (TRL's `loss_type` names get a hint)",
        ),
        TRAINER_DEFAULTS.lossAggregation,
        "Loss aggregation (`token-mean` is TRL's `dapo`) [`loss_type`].",
      ),
    ),
    normalizer: optional(checkedByTrainer<number>('a finite number > 0'), {
      description:
        'Normalizer of `seq-mean-token-sum-norm`; with any other aggregation it is `INEFFECTIVE_OPTION`.',
      defaultText: '`maxNewTokens`',
    }),
    numIterations: nullAsUnset(
      withDefault(
        integer({ min: 1 }),
        TRAINER_DEFAULTS.numIterations,
        'μ: PPO epochs per generation batch [`num_iterations`].',
      ),
    ),
    miniBatchSize: optional(integer({ min: 1 }), {
      description:
        'Sequences per optimizer step; a value ≥ the batch (one step per iteration) is accepted, as TRL does.',
      defaultText: 'the whole generation batch',
    }),
    mismatch: optional(
      object(MISMATCH_FIELDS, {
        aliases: { vllm_importance_sampling_cap: 'cap', mask_threshold: 'lowerThreshold' },
      }),
      off(
        "Rollout↔trainer mismatch correction [`vllm_importance_sampling_*`], against the sampler's behaviour logprobs (`Completion.logprobs`, the processed distribution).",
      ),
    ),
    scaleRewards: nullAsUnset(
      optional(oneOf(['group', 'batch', 'none']), {
        description:
          "Advantage scaling [`scale_rewards`]; combinations @rlvr/core's `groupAdvantages` rejects fail in `createGrpoTrainer`.",
        defaultText:
          "the baseline's own (`group` for `mean`, `none` for `leave-one-out`, `batch` for `reinforce-plus-plus` and for GDPO)",
      }),
    ),
    advantageBaseline: nullAsUnset(
      withDefault(
        oneOf(['mean', 'leave-one-out', 'reinforce-plus-plus']),
        'mean',
        'Advantage baseline: `leave-one-out` is RLOO.',
      ),
    ),
    rewardStd: nullAsUnset(
      withDefault(
        oneOf(['sample', 'population']),
        'sample',
        'Std kind of the advantage normalization (as TRL); when no std is used (scaling `none` without GDPO) it is `INEFFECTIVE_OPTION`.',
      ),
    ),
    multiReward: nullAsUnset(
      withDefault(
        oneOf(['sum_then_normalize', 'normalize_then_sum']),
        'sum_then_normalize',
        'How several reward functions combine (GDPO: `normalize_then_sum`).',
      ),
    ),
    dynamicSampling: optional(
      expecting(
        zod.union([boolean(), DYNAMIC_SAMPLING_SCHEMA]),
        // (a value of another type reads as a wrong options object, as it did)
        'an options object',
      ),
      off(
        'DAPO dynamic sampling: drop groups whose reward std ≤ `minStd` and sample more prompts until `promptsPerStep` groups are kept or `maxRounds` rounds were spent; a step with no kept group is skipped (counted). `true`: the defaults.',
      ),
    ),
    maskTruncatedCompletions: withDefault(
      boolean(),
      false,
      'Mask completions that hit `maxNewTokens` out of the loss [`mask_truncated_completions`].',
    ),
    overlong: optional(
      object(
        {
          maxLength: required(checkedByTrainer<number>(OVERLONG), 'L_max.'),
          bufferLength: required(
            checkedByTrainer<number>(OVERLONG),
            'Length of the soft-penalty zone before L_max.',
          ),
          penaltyFactor: optional(checkedByTrainer<number>('a finite number >= 0'), {
            description: 'Penalty at (and beyond) L_max.',
            defaultText: '`1`',
          }),
        },
        {
          aliases: {
            overlong_buffer_len: 'bufferLength',
            overlong_penalty_factor: 'penaltyFactor',
          },
        },
      ),
      off(
        'DAPO soft overlong punishment added to the reward (a reward column named `overlong`); `INEFFECTIVE_OPTION` when `maxLength − bufferLength ≥ maxNewTokens`.',
      ),
    ),
    schedule: optional(
      object(SCHEDULE_FIELDS, {
        aliases: { lr: 'learningRate', lr_scheduler_type: 'schedule', kind: 'schedule' },
      }),
      {
        description: 'Learning rate and schedule [`learning_rate`, `lr_scheduler_type`].',
        defaultText: `constant \`${TRAINER_DEFAULTS.learningRate}\``,
      },
    ),
    optimizer: optional(
      object(
        {
          betas: optional(checkedByTrainer<readonly [number, number]>('a pair [β₁, β₂]'), {
            description: OPTIMIZER_DOC.betas,
            defaultText: '`[0.9, 0.999]`',
          }),
          epsilon: optional(checkedByTrainer<number>('a finite number > 0'), {
            description: OPTIMIZER_DOC.epsilon,
            defaultText: '`1e-8`',
          }),
          weightDecay: optional(checkedByTrainer<number>('a finite number >= 0'), {
            description: OPTIMIZER_DOC.weightDecay,
            defaultText: `\`${TRAINER_DEFAULTS.weightDecay}\``,
          }),
        },
        {
          aliases: {
            adam_beta1: 'betas',
            adam_beta2: 'betas',
            adam_epsilon: 'epsilon',
            eps: 'epsilon',
          },
        },
      ),
      {
        description: 'AdamW settings [`adam_beta1`, `adam_beta2`, `adam_epsilon`, `weight_decay`].',
        defaultText: '`ADAMW_DEFAULTS`',
      },
    ),
    maxGradNorm: nullAsUnset(
      withDefault(
        number({ min: 0 }),
        TRAINER_DEFAULTS.maxGradNorm,
        'Global-norm clipping [`max_grad_norm`].',
      ),
    ),
    microBatchSize: optional(integer({ min: 1 }), {
      description: 'Sequences per forward/backward pass; does not change the update.',
      defaultText: 'all',
    }),
    microBatchTokens: optional(checkedByTrainer<number>('an integer >= 1'), {
      description:
        'Token budget of a forward/backward pass (rows × row length); does not change the update.',
      defaultText: 'native engine: the largest the memory limit allows',
    }),
    gradientCheckpointing: optional(checkedByTrainer<boolean | 'auto'>("true, false or 'auto'"), {
      description:
        'Activation checkpointing (`auto`: only where the kept activations would not fit) [`gradient_checkpointing`].',
      defaultText: `\`'${TRAINER_DEFAULTS.gradientCheckpointing}'\``,
    }),
    memoryLimitBytes: optional(checkedByTrainer<number>('a finite number > 0'), {
      description: 'Memory the training process may use.',
      defaultText: '`os.totalmem()`',
    }),
    lora: optional(checkedByTrainer<LoraOptions>("createPolicyTrainer's `lora` options"), {
      description:
        "LoRA adapters (PEFT's `LoraConfig`: `r`, `alpha`, `dropout`, `targetModules`, `rslora`, `seed`, `adapter`): the base model is frozen, the reference policy is the base with the adapters off, checkpoints hold the adapter in PEFT's files (`adapter/`), samplers get the merged weights [`peft_config`].",
      defaultText: 'off',
    }),
    onNonFinite: nullAsUnset(
      withDefault(
        oneOf(['skip', 'error']),
        TRAINER_DEFAULTS.onNonFinite,
        'NaN/Inf loss, gradients or logprobs: skip the update and count it, or throw.',
      ),
    ),
    maxConsecutiveSkips: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        TRAINER_DEFAULTS.maxConsecutiveSkips,
        "With `onNonFinite: 'skip'`: this many skipped updates in a row stop the run with `TRAINING_STALLED` (0: never); with `onNonFinite: 'error'` it is `INEFFECTIVE_OPTION`.",
      ),
    ),
    syncWeights: withDefault(
      boolean(),
      true,
      'Push the new weights to `sampler.updateWeights` after every update. A sampler without `updateWeights` is an error unless this is `false` (the run is then off-policy by design: say so explicitly).',
    ),
    maxStaleness: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        0,
        "Asynchronous GRPO with bounded staleness [TRL `max_staleness`, prime-rl `max_async_level`] (0: synchronous): the sampler requests of the next k steps are issued before this step's update; a group is trained on only while `current − version ≤ maxStaleness`, else dropped and counted (`async/dropped_stale_groups`). Needs `mismatch`; not with `dynamicSampling` yet. In-flight requests are re-issued on resume.",
      ),
    ),
    maxTurns: optional(integer({ min: 1 }), {
      description:
        'Multi-turn runs (`environment` given): most assistant turns per trajectory [TRL `max_turns`]. Without an environment it is `INEFFECTIVE_OPTION`.',
      defaultText: `\`${DEFAULT_MAX_TURNS}\` (with an environment)`,
    }),
    maxTotalTokens: optional(integer({ min: 1 }), {
      description:
        'Multi-turn runs: most tokens per trajectory after the prompt, policy and environment tokens together (`maxNewTokens` is then the limit of one turn). Without an environment it is `INEFFECTIVE_OPTION`.',
      defaultText: '`maxTurns × maxNewTokens` (with an environment)',
    }),
    outputDir: optional(text('a folder path'), {
      description: 'Folder for `metrics.jsonl`, `completions.jsonl` and `checkpoints/`.',
      defaultText: 'none',
    }),
    saveEvery: nullAsUnset(
      optional(integer({ min: 1 }), {
        description: `Checkpoint every this many steps, and at the end [\`save_steps\`]. ${WRITTEN}`,
        defaultText: '`max(1, ceil(maxSteps / 10))`',
      }),
    ),
    keepLast: nullAsUnset(
      withDefault(
        integer({ min: 1 }),
        2,
        `Keep the newest N checkpoints of this run (checkpoints of other runs are never removed) [\`save_total_limit\`]. ${WRITTEN}`,
      ),
    ),
    logCompletionsEvery: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        1,
        `Write the completions table every this many steps (0: never). ${WRITTEN}`,
      ),
    ),
    progress: optional(boolean(), {
      description: 'Console progress bar; not with `quiet`.',
      defaultText: 'when stderr is a TTY and `CI` is unset',
    }),
    quiet: withDefault(
      boolean(),
      false,
      'No console output at all (progress or diagnostics); metrics files are still written.',
    ),
    entropyCollapseRatio: nullAsUnset(
      withDefault(
        number({ min: 0, max: 1 }),
        0.1,
        "Warn when the mean entropy falls below this fraction of the first step's.",
      ),
    ),
  },
  { parameter: 'config', aliases: CONFIG_ALIASES },
);

/**
 * Settings of a {@link GrpoTrainer} run (see {@link GRPO_CONFIG} for each one). Unknown keys are
 * errors (`UNKNOWN_OPTION`, with the closest valid name: `kl_coef` → `beta`, `learning_rate` →
 * `schedule`, `steps` → `maxSteps`), also inside `dynamicSampling`, `mismatch`, `overlong`,
 * `schedule` and `optimizer`. A setting that has no effect in the given combination is an error
 * too (`INEFFECTIVE_OPTION`).
 */
export type GrpoConfig = OptionsInput<typeof GRPO_CONFIG.schema>;

/** {@link GrpoConfig} with defaults applied. @internal */
export type ResolvedGrpoConfig = Required<
  Pick<
    GrpoConfig,
    | 'maxSteps'
    | 'promptsPerStep'
    | 'groupSize'
    | 'seed'
    | 'shuffle'
    | 'maxNewTokens'
    | 'temperature'
    | 'beta'
    | 'klEstimator'
    | 'epsilonLow'
    | 'numIterations'
    | 'advantageBaseline'
    | 'rewardStd'
    | 'multiReward'
    | 'maskTruncatedCompletions'
    | 'keepLast'
    | 'logCompletionsEvery'
    | 'quiet'
    | 'entropyCollapseRatio'
    | 'lossAggregation'
    | 'lossMode'
    | 'topEntropyQuantile'
    | 'useBiasCorrectionKl'
    | 'onNonFinite'
    | 'maxConsecutiveSkips'
    | 'maxGradNorm'
    | 'syncWeights'
    | 'maxStaleness'
    | 'schedule'
  >
> &
  GrpoConfig & {
    dynamic: { minStd: number; maxRounds: number } | undefined;
    saveEvery: number;
  };
