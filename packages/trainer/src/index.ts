export type {
  BackendName,
  MatMulEngine,
  SelectBackendOptions,
  SelectedBackend,
} from './backend/select-backend.js';
export { activeBackend, BACKEND_NAMES, selectBackend } from './backend/select-backend.js';
export type { ModelInput } from './batch/prepared-input.js';
export type { TokenSequence } from './batch/token-batch.js';
export type { TrainerDefaults } from './defaults.js';
export { ADAMW_DEFAULTS, LORA_DEFAULTS, SCHEDULE_DEFAULTS, TRAINER_DEFAULTS } from './defaults.js';
export { TrainingStalledError } from './errors/training-stalled-error.js';
export type { GrpoTrainerOptions } from './grpo/create-grpo-trainer.js';
export { createGrpoTrainer } from './grpo/create-grpo-trainer.js';
export type { EffectiveGrpoConfig } from './grpo/effective-config.js';
export { effectiveGrpoConfig } from './grpo/effective-config.js';
export type { GrpoConfig } from './grpo/grpo-config.js';
export { GRPO_CONFIG } from './grpo/grpo-config.js';
export type { GrpoMetricRecord, GrpoTrainResult } from './grpo/grpo-trainer.js';
export { GrpoTrainer } from './grpo/grpo-trainer.js';
export type { PromptRecord } from './grpo/prompt-dataset.js';
export { loadPromptDataset } from './grpo/prompt-dataset.js';
export { GRPO_CONFIG_KEYS } from './grpo/resolve-config.js';
export type { CreateLlamaModelOptions, ModelEngine } from './model/llama-model.js';
export { createLlamaModel, LlamaModel } from './model/llama-model.js';
export type { AdamWOptions, AdamWState } from './optim/adamw.js';
export { isNoDecayParameter } from './optim/adamw.js';
export type { LearningRateSchedule, ScheduleKind } from './optim/schedule.js';
export { learningRateAt } from './optim/schedule.js';
export { POLICY_TRAINER_OPTION_KEYS } from './policy-trainer-option-keys.js';
export type { MemoryParts, MemoryPlan } from './train/memory-plan.js';
export { planMemory } from './train/memory-plan.js';
export { createPolicyTrainer, PolicyTrainer } from './train/policy-trainer.js';
export type {
  GrpoLossConfig,
  LoraOptions,
  PolicyTrainerOptions,
} from './train/trainer-options.js';
export { POLICY_TRAINER_OPTIONS } from './train/trainer-options.js';
export type {
  CompletionLogprobsOptions,
  CompletionLogprobsResult,
  GrpoBatch,
  GrpoStepMetrics,
  GrpoStepOptions,
  GrpoStepResult,
  LogitsLossContext,
  LogitsLossFunction,
  LogitsRow,
  LogitsStepOptions,
  LogitsStepResult,
  OptimizerStepMetrics,
  PolicyTrainerState,
  SftStepOptions,
  SftStepResult,
} from './train/trainer-types.js';
export { VERSION } from './version.js';
