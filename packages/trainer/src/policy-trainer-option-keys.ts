import type { PolicyTrainerOptions } from './train/trainer-options.js';

/**
 * Every key of {@link PolicyTrainerOptions}: the keys `createPolicyTrainer` accepts (any other is
 * an `UNKNOWN_OPTION` error). Exported so that layers passing options through (apps, CLIs) check
 * against the same list instead of a copy; a test checks that it is exactly what
 * `createPolicyTrainer`'s validator accepts and every key of the type.
 */
export const POLICY_TRAINER_OPTION_KEYS = [
  'schedule',
  'optimizer',
  'maxGradNorm',
  'microBatchSize',
  'microBatchTokens',
  'gradientCheckpointing',
  'memoryLimitBytes',
  'lora',
  'onNonFinite',
  'maxConsecutiveSkips',
  'grpo',
  'referenceCheckpoint',
] as const satisfies readonly (keyof PolicyTrainerOptions)[];
