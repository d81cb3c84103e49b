import { defaultsOf } from '@rlvr/options';
import { OPTIMIZER_SCHEMA } from './optim/optimizer-options.js';
import { SCHEDULE_SCHEMA } from './optim/schedule.js';
import { LORA_SCHEMA } from './train/lora-options.js';
import { TRAINER_DEFAULTS } from './trainer-defaults.js';

export { TRAINER_DEFAULTS };

/**
 * The LoRA settings used when a field of `lora` is not given: PEFT's `LoraConfig` defaults
 * [`r` 8, `lora_alpha` 8, `lora_dropout` 0.0, `target_modules` for Llama/Qwen2 `q_proj`,
 * `v_proj`, `use_rslora` False], read from the `lora` schema (its `seed` default, 0, is ours).
 */
export const LORA_DEFAULTS = (() => {
  const { seed: _seed, ...peft } = defaultsOf(LORA_SCHEMA);
  return Object.freeze(peft);
})();

/** The type of {@link TRAINER_DEFAULTS}. */
export type TrainerDefaults = typeof TRAINER_DEFAULTS;

/**
 * The `optimizer` (AdamW) settings used when a field is not given: PyTorch's / Hugging Face's
 * [`adam_beta1` 0.9, `adam_beta2` 0.999, `adam_epsilon` 1e-8, `weight_decay` 0.0 =
 * {@link TRAINER_DEFAULTS}.weightDecay], read from the `optimizer` schema. `createPolicyTrainer`
 * and `effectiveGrpoConfig` fill `optimizer` from it; layers that show a run's settings (the
 * CLI's `--print-config`) read it instead of copying the numbers.
 */
export const ADAMW_DEFAULTS = defaultsOf(OPTIMIZER_SCHEMA);

/**
 * The `schedule` settings used when a field is not given: a constant learning rate of
 * {@link TRAINER_DEFAULTS}.learningRate, no warm-up, no floor (`totalSteps` has no default: the
 * decaying schedules need it), the other fields read from the schedule's schema. Hugging Face's
 * `lr_scheduler_type` default is `linear`; ours is `constant` (no `totalSteps` needed).
 * `learningRateAt`, `createPolicyTrainer` and `effectiveGrpoConfig` fill `schedule` from it;
 * layers that show a run's settings read it instead of copying it.
 */
export const SCHEDULE_DEFAULTS = Object.freeze({
  /** Peak learning rate [`learning_rate`]. */
  learningRate: TRAINER_DEFAULTS.learningRate,
  ...defaultsOf(SCHEDULE_SCHEMA),
});
