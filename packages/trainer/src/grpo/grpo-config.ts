import type {
  AdvantageBaseline,
  AdvantageScaling,
  KlEstimator,
  LossAggregation,
  LossMode,
  MismatchMode,
  MultiRewardAggregation,
  RatioLevel,
  SoftOverlongOptions,
  StdKind,
} from '@rlvr/core';
import type { AdamWOptions } from '../optim/adamw.js';
import type { LearningRateSchedule } from '../optim/schedule.js';
import type { LoraOptions } from '../train/trainer-options.js';

/**
 * Settings of a {@link GrpoTrainer} run, named after TRL's `GRPOConfig` where one exists (TRL's
 * name in brackets). Defaults are {@link TRAINER_DEFAULTS} (shared with `createPolicyTrainer`).
 *
 * Unknown keys are errors (`UNKNOWN_OPTION`, with the closest valid name: `kl_coef` → `beta`,
 * `learning_rate` → `schedule`, `steps` → `maxSteps`), also inside `dynamicSampling`, `mismatch`,
 * `overlong`, `schedule` and `optimizer`. A setting that has no effect in the given combination
 * is an error too (`INEFFECTIVE_OPTION`); each such case is named on the field below.
 */
export type GrpoConfig = {
  /**
   * Generation steps to run (each: sample, score, one `grpoStep`) [`max_steps`]. May change on
   * resume (extending a run is normal); it is not part of the settings fingerprint.
   */
  maxSteps: number;
  /** Prompts per generation step (default 4). */
  promptsPerStep?: number;
  /** G: completions per prompt (default 8) [`num_generations`]. */
  groupSize?: number;
  /** Seed of the data order and of every sampler request (default 0) [`seed`]. */
  seed?: number;
  /** Shuffle the dataset each epoch (default true). */
  shuffle?: boolean;

  /** Hard cap on generated tokens [`max_completion_length`]. */
  maxNewTokens: number;
  /**
   * Sampling temperature, > 0 (default 1) [`temperature`]. The trainer's logprobs are
   * `log softmax(logits / temperature)`, the same distribution the sampler drew from, so a run at
   * T ≠ 1 stays on-policy.
   */
  temperature?: number;
  /** Nucleus sampling [`top_p`]. */
  topP?: number;
  /** Top-k sampling [`top_k`]. */
  topK?: number;
  /** Min-p sampling [`min_p`]. */
  minP?: number;
  /** Repetition penalty [`repetition_penalty`]. */
  repetitionPenalty?: number;
  /** Stop strings. */
  stop?: readonly string[];

  /** β: KL coefficient to the frozen initial policy (default 0: no reference model) [`beta`]. */
  beta?: number;
  /** KL estimator (default `k3`). Setting it with β = 0 is `INEFFECTIVE_OPTION`. */
  klEstimator?: KlEstimator;
  /**
   * DeepSeek-V3.2's bias-corrected KL: the per-token KL estimate times the importance ratio
   * π_θ/π_old, with the gradient through it (for k3: `r·(logp − refLogp)`, unbiased under π_old's
   * samples) [`use_bias_correction_kl`]. Default false; with β = 0 it is `INEFFECTIVE_OPTION`.
   */
  useBiasCorrectionKl?: boolean;
  /**
   * The policy-gradient term (default `clip`): `clip` is PPO/GRPO/DAPO's clipped surrogate,
   * `cispo` MiniMax-M1's (the clipped ratio `clip(r, 1 − ε_low, 1 + ε_high)` as a stop-gradient
   * weight on −A·log π: every token keeps a gradient), `sapo` the soft gate `σ(τ(r − 1))·4/τ` of
   * Soft Adaptive Policy Optimization [TRL `loss_type: 'cispo' | 'sapo'`; verl
   * `policy_loss.loss_mode`]. TRL aggregates `cispo` as `dapo` (our default `token-mean`) and
   * `sapo` as `grpo` (`seq-mean-token-mean`, as verl always does for SAPO): set `lossAggregation`
   * to match. A dual clip or δ with `cispo`, and ε, δ or the dual clip with `sapo`, are
   * `INEFFECTIVE_OPTION`.
   */
  lossMode?: LossMode;
  /**
   * ε_low (default 0.2) [`epsilon`]; with `cispo` the weight's lower bound 1 − ε_low (MiniMax-M1
   * sets none: `epsilonLow: 1`).
   */
  epsilonLow?: number;
  /**
   * ε_high (default ε_low; DAPO 0.28) [`epsilon_high`]; with `cispo` the weight's cap 1 + ε_high
   * (TRL's `epsilon_high` for cispo is the cap itself: its recommended 5.0 is `epsilonHigh: 4`).
   */
  epsilonHigh?: number;
  /** Two-sided clip δ [`delta`]. `clip` only. */
  delta?: number;
  /** Dual-clip constant c > 1. `clip` only. */
  dualClip?: number;
  /** SAPO's gate temperature for A > 0 (default 1) [`sapo_temperature_pos`]. `sapo` only. */
  sapoTemperaturePos?: number;
  /** SAPO's gate temperature for A ≤ 0 (default 1.05) [`sapo_temperature_neg`]. `sapo` only. */
  sapoTemperatureNeg?: number;
  /**
   * ρ ∈ [0, 1] of "Beyond the 80/20 Rule" (default 1: every token; the paper: 0.2)
   * [`top_entropy_quantile`]: the policy term (and the entropy bonus) only on the tokens whose
   * entropy is ≥ the (1 − ρ)-quantile of the mini-batch's unmasked tokens. The entropies are the
   * pre-update policy's (the start of the step, as π_old), so the selection is fixed over the μ
   * iterations and does not depend on `microBatchSize`; TRL takes the quantile per micro-batch of
   * the current forward (the same when the mini-batch is one micro-batch and μ = 1). Costs one
   * forward pass per step when π_old is not computed anyway (μ = 1, one mini-batch, no `mismatch`).
   */
  topEntropyQuantile?: number;
  /**
   * δ ≥ 0 of DeepSeek-V3.2's off-policy sequence masking [`off_policy_mask_threshold`, e.g. 0.5]:
   * a sequence's tokens with A < 0 lose their policy term when the sequence's mean of
   * `behaviourLogprob − logprob` (the sampler's logprobs vs the current policy, over its loss
   * tokens) exceeds δ. The KL term stays. Default: off.
   */
  offPolicyMaskThreshold?: number;
  /** Token or sequence (GSPO) ratios [`importance_sampling_level`]. Default `token`. */
  ratioLevel?: RatioLevel;
  /** η: entropy bonus (default 0). */
  entropyCoefficient?: number;
  /** Loss aggregation (default `token-mean`, TRL's `dapo`) [`loss_type`]. */
  lossAggregation?: LossAggregation;
  /**
   * Normalizer of `seq-mean-token-sum-norm` (default `maxNewTokens`); with any other aggregation
   * it is `INEFFECTIVE_OPTION`.
   */
  normalizer?: number;
  /** μ: PPO epochs per generation batch (default 1) [`num_iterations`]. */
  numIterations?: number;
  /**
   * Sequences per optimizer step (default: the whole generation batch). A value ≥ the batch
   * (one step per iteration) is accepted, as TRL does.
   */
  miniBatchSize?: number;
  /**
   * Rollout↔trainer mismatch correction [`vllm_importance_sampling_*`], against the sampler's
   * behaviour logprobs (`Completion.logprobs`, the processed distribution). Default off.
   */
  mismatch?: { mode?: MismatchMode; cap?: number; lowerThreshold?: number };

  /**
   * Advantage scaling [`scale_rewards`]. Default: the baseline's own (`group` for `mean`, `none`
   * for `leave-one-out`, `batch` for `reinforce-plus-plus` and for GDPO), as @rlvr/core's
   * `groupAdvantages`. Combinations it rejects fail in `createGrpoTrainer`.
   */
  scaleRewards?: AdvantageScaling;
  /** Advantage baseline (default `mean`): `leave-one-out` is RLOO, `reinforce-plus-plus`. */
  advantageBaseline?: AdvantageBaseline;
  /**
   * Std kind of the advantage normalization (default `sample`, as TRL). When no std is used
   * (scaling `none` without GDPO) it is `INEFFECTIVE_OPTION`.
   */
  rewardStd?: StdKind;
  /** How several reward functions combine (default `sum_then_normalize`; GDPO: `normalize_then_sum`). */
  multiReward?: MultiRewardAggregation;
  /**
   * DAPO dynamic sampling: drop groups whose reward std ≤ `minStd` and sample more prompts until
   * `promptsPerStep` groups are kept or `maxRounds` sampling rounds were spent; a step with no
   * kept group is skipped (counted). `true` = `{ minStd: 1e-6, maxRounds: 3 }`. Default off.
   */
  dynamicSampling?: boolean | { minStd?: number; maxRounds?: number };
  /** Mask completions that hit `maxNewTokens` out of the loss [`mask_truncated_completions`]. */
  maskTruncatedCompletions?: boolean;
  /**
   * DAPO soft overlong punishment added to the reward (as a reward column named `overlong`).
   * `INEFFECTIVE_OPTION` when `maxLength − bufferLength ≥ maxNewTokens` (it could never apply).
   */
  overlong?: SoftOverlongOptions;

  /** Learning rate and schedule (default constant 1e-6) [`learning_rate`, `lr_scheduler_type`]. */
  schedule?: LearningRateSchedule;
  /** AdamW settings [`adam_beta1`, `adam_beta2`, `adam_epsilon`, `weight_decay`]. */
  optimizer?: AdamWOptions;
  /** Global-norm clipping (default 1) [`max_grad_norm`]. */
  maxGradNorm?: number;
  /** Sequences per forward/backward pass (default: all); does not change the update. */
  microBatchSize?: number;
  /**
   * Token budget of a forward/backward pass (rows × row length; default on the native engine: the
   * largest the memory limit allows); does not change the update.
   */
  microBatchTokens?: number;
  /**
   * Activation checkpointing (default `'auto'`: only where the kept activations would not fit)
   * [`gradient_checkpointing`].
   */
  gradientCheckpointing?: boolean | 'auto';
  /** Memory the training process may use (default `os.totalmem()`). */
  memoryLimitBytes?: number;
  /**
   * LoRA adapters (PEFT's `LoraConfig`: `r`, `alpha`, `dropout`, `targetModules`, `rslora`): the
   * base model is frozen, the reference policy is the base with the adapters off, checkpoints
   * hold the adapter in PEFT's files (`adapter/`), samplers get the merged weights [`peft_config`].
   */
  lora?: LoraOptions;
  /** NaN/Inf loss, gradients or logprobs: skip the update and count it (default) or throw. */
  onNonFinite?: 'error' | 'skip';
  /**
   * With `onNonFinite: 'skip'`: this many skipped updates in a row stop the run with
   * `TRAINING_STALLED` (default 3; 0: never). With `onNonFinite: 'error'` it is `INEFFECTIVE_OPTION`.
   */
  maxConsecutiveSkips?: number;
  /**
   * Push the new weights to `sampler.updateWeights` after every update (default true). A sampler
   * without `updateWeights` is an error unless this is `false` (then the sampler keeps its own
   * weights and the run is off-policy by design: say so explicitly).
   */
  syncWeights?: boolean;
  /**
   * Asynchronous GRPO with bounded staleness [TRL `max_staleness`, prime-rl `max_async_level`]
   * (default 0: synchronous). With k ≥ 1 the sampler requests of the next k steps are issued
   * before this step's update, so generation overlaps training; at most k + 1 requests are in
   * flight (backpressure). Each group carries the policy version that sampled it (generation
   * steps completed when its request was issued, or older when a completion reports, as
   * `policyVersion`, the `step` of a weight snapshot that had already been replaced then, as
   * `@rlvr/distributed`'s rollout workers do); it is trained on only while `current − version ≤ maxStaleness`, else
   * dropped and counted (`async/dropped_stale_groups`). Needs `mismatch` (the behaviour logprobs
   * are the stale policy's; the importance-sampling correction handles the off-policy part) and
   * is not combined with `dynamicSampling` yet. In-flight requests are not checkpointed: a
   * resume re-issues them from the saved data position and RNG (same prompts and seeds,
   * sampled with the checkpoint's weights).
   */
  maxStaleness?: number;
  /**
   * Multi-turn runs (`environment` given): most assistant turns per trajectory (default 4)
   * [TRL `max_turns`]. Without an environment it is `INEFFECTIVE_OPTION`.
   */
  maxTurns?: number;
  /**
   * Multi-turn runs: most tokens per trajectory after the prompt, policy and environment tokens
   * together (default `maxTurns × maxNewTokens`; `maxNewTokens` is then the limit of one turn).
   * Without an environment it is `INEFFECTIVE_OPTION`.
   */
  maxTotalTokens?: number;

  /** Folder for `metrics.jsonl`, `completions.jsonl` and `checkpoints/` (default: none). */
  outputDir?: string;
  /**
   * Checkpoint every this many steps, and at the end (default `max(1, ceil(maxSteps / 10))`)
   * [`save_steps`]. Without `outputDir` it is `INEFFECTIVE_OPTION`.
   */
  saveEvery?: number;
  /**
   * Keep the newest N checkpoints of this run (default 2) [`save_total_limit`]; checkpoints of
   * other runs are never removed. Without `outputDir` it is `INEFFECTIVE_OPTION`.
   */
  keepLast?: number;
  /**
   * Write the completions table every this many steps (default 1; 0: never). Without `outputDir`
   * it is `INEFFECTIVE_OPTION`.
   */
  logCompletionsEvery?: number;
  /** Console progress bar (default: when stderr is a TTY and `CI` is unset); not with `quiet`. */
  progress?: boolean;
  /** No console output at all (progress or diagnostics); metrics files are still written. */
  quiet?: boolean;
  /** Warn when the mean entropy falls below this fraction of the first step's (default 0.1). */
  entropyCollapseRatio?: number;
};

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
