import { totalmem } from 'node:os';
import { rejectIneffective, validateNumber } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import {
  custom,
  defineOptions,
  integer,
  number,
  type OptionsInput,
  oneOf,
  optional,
  parseOptions,
  withDefault,
} from '@rlvr/options';
import { nullAsUnset, withoutUnsetNulls } from '../null-as-unset.js';
import type { AdamWOptions } from '../optim/adamw.js';
import { OPTIMIZER_SCHEMA, resolveOptimizer } from '../optim/optimizer-options.js';
import { type LearningRateSchedule, SCHEDULE_SCHEMA, validateSchedule } from '../optim/schedule.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';
import { GRPO_LOSS_SCHEMA, type ResolvedGrpoLoss, resolveGrpoLoss } from './grpo-loss-options.js';
import { LORA_SCHEMA, type ResolvedLora, resolveLora } from './lora-options.js';

export {
  corePolicySettings,
  type GrpoLossConfig,
  type ResolvedGrpoLoss,
} from './grpo-loss-options.js';
export { type LoraOptions, type ResolvedLora, resolveLora } from './lora-options.js';

const CHECKPOINTING = "true, false or 'auto'";

/**
 * The options of `createPolicyTrainer`, declared once: {@link PolicyTrainerOptions},
 * `POLICY_TRAINER_OPTION_KEYS`, the defaults ({@link TRAINER_DEFAULTS}), the validation and the
 * README table come from it. Cross-field rules are in {@link resolveTrainerOptions}. @internal
 */
export const POLICY_TRAINER_OPTIONS = defineOptions(
  {
    schedule: nullAsUnset(
      optional(SCHEDULE_SCHEMA, {
        description: 'Learning rate and its schedule [`learning_rate`, `lr_scheduler_type`].',
        defaultText: `constant \`${TRAINER_DEFAULTS.learningRate}\`, no warm-up (\`SCHEDULE_DEFAULTS\`)`,
      }),
    ),
    optimizer: optional(OPTIMIZER_SCHEMA, {
      description: "AdamW settings; a field not given is `ADAMW_DEFAULTS`'.",
      defaultText: '`ADAMW_DEFAULTS`',
    }),
    maxGradNorm: nullAsUnset(
      withDefault(
        number({ min: 0 }),
        TRAINER_DEFAULTS.maxGradNorm,
        'Clip gradients to this global L2 norm (0 disables clipping) [`max_grad_norm`].',
      ),
    ),
    microBatchSize: nullAsUnset(
      withDefault(integer({ min: 1 }), TRAINER_DEFAULTS.microBatchSize, {
        description: 'Sequences per forward/backward pass; gradients accumulate.',
        defaultText: 'all at once',
      }),
    ),
    microBatchTokens: optional(integer({ min: 1 }), {
      description:
        'Token budget of a forward/backward pass (rows × row length, padding included): sequences are split into micro-batches that stay under it (a longer sequence is a micro-batch of its own); the update does not depend on the split.',
      defaultText: 'native engine: the largest the memory limit allows; tfjs: unlimited',
    }),
    gradientCheckpointing: nullAsUnset(
      withDefault(
        custom<boolean | 'auto'>(
          (value) => value === 'auto' || typeof value === 'boolean',
          CHECKPOINTING,
        ),
        TRAINER_DEFAULTS.gradientCheckpointing,
        "Recompute each layer's activations in the backward instead of keeping them (activation checkpointing, Hugging Face's `gradient_checkpointing`): less memory, ~1/3 more compute. `'auto'`: off when the kept activations fit the memory limit, on where they would not. Native engine only.",
      ),
    ),
    memoryLimitBytes: nullAsUnset(
      optional(number({ min: 0, exclusiveMin: true }), {
        description:
          'The memory the training process may use: a model whose weights, gradients, optimizer state and reference do not fit is refused with a `MemoryLimitError` naming what would fit, and steps size their micro-batches to it.',
        defaultText: '`os.totalmem()`',
      }),
    ),
    lora: optional(LORA_SCHEMA, {
      description:
        "LoRA adapters (PEFT's `LoraConfig`): train them instead of the model's weights (native engine).",
      defaultText: 'off',
    }),
    onNonFinite: nullAsUnset(
      withDefault(
        oneOf(['error', 'skip']),
        TRAINER_DEFAULTS.onNonFinite,
        'NaN/Inf loss, gradients or logprobs: skip the update and count it, or throw a `NonFiniteError`.',
      ),
    ),
    maxConsecutiveSkips: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        TRAINER_DEFAULTS.maxConsecutiveSkips,
        "With `onNonFinite: 'skip'`: this many skipped updates in a row throw a `TrainingStalledError` (0 never stops); an applied update resets the count.",
      ),
    ),
    grpo: optional(GRPO_LOSS_SCHEMA, {
      description: "GRPO loss settings (the fields of @rlvr/core's `policyLoss`).",
      defaultText: '`TRAINER_DEFAULTS`',
    }),
    referenceCheckpoint: optional(
      custom<Checkpoint>(() => true, 'a Checkpoint'),
      {
        description:
          'Weights of the frozen reference policy when `grpo.beta` > 0; pass the saved reference when resuming a run.',
        defaultText: "a copy of the model's current weights",
      },
    ),
  },
  { parameter: 'options' },
);

/** Options of `createPolicyTrainer` (see {@link POLICY_TRAINER_OPTIONS}); defaults are {@link TRAINER_DEFAULTS}. */
export type PolicyTrainerOptions = OptionsInput<typeof POLICY_TRAINER_OPTIONS.schema>;

/** Validated {@link PolicyTrainerOptions}. @internal */
export type ResolvedTrainerOptions = {
  schedule: LearningRateSchedule;
  optimizer: Required<AdamWOptions>;
  maxGradNorm: number;
  microBatchSize: number;
  microBatchTokens: number | undefined;
  gradientCheckpointing: boolean | 'auto';
  memoryLimitBytes: number;
  /** Where the limit comes from, for messages (`memoryLimitBytes` or `os.totalmem()`). */
  memoryLimitName: string;
  lora: ResolvedLora | undefined;
  onNonFinite: 'error' | 'skip';
  maxConsecutiveSkips: number;
  grpo: ResolvedGrpoLoss;
  referenceCheckpoint: Checkpoint | undefined;
};

/** Validates a temperature T > 0 (finite). @internal */
export function validateTemperature(value: unknown, parameter: string, functionName: string) {
  return validateNumber(value, { parameter, functionName, min: 0, exclusiveMin: true });
}

/** Validates {@link PolicyTrainerOptions} and fills the defaults. @internal */
export function resolveTrainerOptions(
  options: unknown,
  functionName: string,
): ResolvedTrainerOptions {
  const { schema } = POLICY_TRAINER_OPTIONS;
  const parsed = parseOptions(schema, withoutUnsetNulls(schema, options), {
    parameter: 'options',
    functionName,
  });
  const raw = (options ?? {}) as PolicyTrainerOptions;
  const schedule = raw.schedule ?? { learningRate: TRAINER_DEFAULTS.learningRate };
  validateSchedule(schedule, functionName, 'options.schedule'); // totalSteps: needs warmupSteps
  if (raw.maxConsecutiveSkips !== undefined && parsed.onNonFinite === 'error') {
    rejectIneffective({
      parameter: 'options.maxConsecutiveSkips',
      value: raw.maxConsecutiveSkips,
      because: "onNonFinite is 'error' (the first non-finite update throws; nothing is skipped)",
      functionName,
    });
  }
  const grpo = resolveGrpoLoss(raw.grpo, functionName);
  if (raw.referenceCheckpoint !== undefined && grpo.beta === 0) {
    rejectIneffective({
      parameter: 'options.referenceCheckpoint',
      value: '(a checkpoint)',
      because: 'grpo.beta is 0 (no KL term, so no reference model is used)',
      functionName,
    });
  }
  return {
    schedule,
    optimizer: resolveOptimizer(raw.optimizer, functionName),
    maxGradNorm: parsed.maxGradNorm,
    microBatchSize: parsed.microBatchSize,
    microBatchTokens: parsed.microBatchTokens,
    gradientCheckpointing: parsed.gradientCheckpointing,
    memoryLimitBytes: parsed.memoryLimitBytes ?? totalmem(),
    memoryLimitName: raw.memoryLimitBytes === undefined ? 'os.totalmem()' : 'memoryLimitBytes',
    lora: raw.lora === undefined ? undefined : resolveLora(raw.lora, functionName),
    onNonFinite: parsed.onNonFinite,
    maxConsecutiveSkips: parsed.maxConsecutiveSkips,
    grpo,
    referenceCheckpoint: raw.referenceCheckpoint,
  };
}
