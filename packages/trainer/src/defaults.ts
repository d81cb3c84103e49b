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
} as const);

/** The type of {@link TRAINER_DEFAULTS}. */
export type TrainerDefaults = typeof TRAINER_DEFAULTS;
