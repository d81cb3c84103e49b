import { MISMATCH_DEFAULTS, POLICY_LOSS_DEFAULTS } from '@rlvr/core';

/**
 * The one set of defaults shared by {@link PolicyTrainer} and {@link GrpoTrainer}, TRL's where TRL
 * has one (its `GRPOConfig` name in brackets; the trainer README's "Defaults" table lists them with
 * their verl names too).
 */
export const TRAINER_DEFAULTS = Object.freeze({
  /** Constant learning rate [`learning_rate` 1e-6]. */
  learningRate: 1e-6,
  /** Token-mean over the batch [`loss_type: 'dapo'`]. */
  lossAggregation: 'token-mean',
  /** Global-norm gradient clipping [`max_grad_norm` 1.0]. */
  maxGradNorm: 1,
  /** A NaN/Inf update is skipped and counted. */
  onNonFinite: 'skip',
  /** Consecutive skipped updates before the run stops with `TRAINING_STALLED`. */
  maxConsecutiveSkips: 3,
  /** ε_low of the clipped ratio [`epsilon` 0.2]; ε_high defaults to it [`epsilon_high`]. */
  epsilonLow: 0.2,
  /** Importance ratio per token; `'sequence'` is GSPO [`importance_sampling_level` 'token']. */
  ratioLevel: 'token',
  /** Entropy bonus coefficient; 0 adds no entropy term. */
  entropyCoefficient: 0,
  /**
   * The policy-gradient term: the clipped surrogate (`'clip'`: GRPO/DAPO; `'cispo'`, `'sapo'` are
   * the others) [TRL folds it into `loss_type`; verl `policy_loss.loss_mode` `'vanilla'`]: core's
   * `POLICY_LOSS_DEFAULTS.lossMode`.
   */
  lossMode: POLICY_LOSS_DEFAULTS.lossMode,
  /** SAPO's gate temperature for A > 0 [`sapo_temperature_pos` 1.0]. `lossMode: 'sapo'` only. */
  sapoTemperaturePos: POLICY_LOSS_DEFAULTS.sapoTemperaturePos,
  /** SAPO's gate temperature for A ≤ 0 [`sapo_temperature_neg` 1.05]. `lossMode: 'sapo'` only. */
  sapoTemperatureNeg: POLICY_LOSS_DEFAULTS.sapoTemperatureNeg,
  /** ρ of the high-entropy token selection; 1 keeps every token [`top_entropy_quantile` 1.0]. */
  topEntropyQuantile: 1,
  /** KL estimate weighted by the importance ratio (DeepSeek-V3.2) [`use_bias_correction_kl` False]. */
  useBiasCorrectionKl: false,
  /**
   * Rollout↔trainer mismatch correction mode when `mismatch` is given without one
   * [`vllm_importance_sampling_mode`]: core's `MISMATCH_DEFAULTS.mode` (`'token-truncate'`, TIS),
   * which `mismatchCorrection` applies.
   */
  mismatchMode: MISMATCH_DEFAULTS.mode,
  /**
   * Sequences per forward/backward pass: every sequence of the batch in one pass (no gradient
   * accumulation) unless `microBatchSize` is given.
   */
  microBatchSize: Number.MAX_SAFE_INTEGER,
  /** β: KL coefficient; 0 needs no reference model [`beta` 0.0]. */
  beta: 0,
  /** KL estimator used when β > 0 (TRL's is k3). */
  klEstimator: 'k3',
  /** Sampling temperature; trainer logprobs use the same [`temperature` 1.0]. */
  temperature: 1,
  /** G: completions per prompt [`num_generations` 8]. */
  groupSize: 8,
  /** μ: optimizer passes per generation batch [`num_iterations` 1]. */
  numIterations: 1,
  /** AdamW weight decay [`weight_decay` 0.0]. */
  weightDecay: 0,
  /**
   * Activation checkpointing: `'auto'` keeps the activations where they fit the memory limit and
   * recomputes them where they would not [`gradient_checkpointing` False].
   */
  gradientCheckpointing: 'auto',
} as const);
