import {
  InvalidArgumentError,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { SCHEDULE_DEFAULTS } from '../defaults.js';

/** Learning-rate schedule after the warm-up (Hugging Face `lr_scheduler_type` names). */
export type ScheduleKind = 'constant' | 'cosine' | 'linear';

/** Options of {@link learningRateAt}. */
export type LearningRateSchedule = {
  /** Peak learning rate. */
  learningRate: number;
  /** Default `constant` ({@link SCHEDULE_DEFAULTS}). */
  schedule?: ScheduleKind;
  /** Linear warm-up from 0 over this many steps (default 0, {@link SCHEDULE_DEFAULTS}). */
  warmupSteps?: number;
  /** Total optimizer steps; required by `cosine` and `linear`. */
  totalSteps?: number;
  /** Floor of the decay as a fraction of the peak (default 0, {@link SCHEDULE_DEFAULTS}). */
  minLearningRateRatio?: number;
};

/**
 * The learning rate of optimizer step `step` (0-based), as Hugging Face's schedulers compute it:
 * `lr · step / warmup` during warm-up, then constant, linear or cosine decay
 * `lr · (min + (1 − min) · ½(1 + cos(π · progress)))` down to `minLearningRateRatio · lr` at
 * `totalSteps`.
 *
 * @example
 * ```ts
 * learningRateAt({ learningRate: 1e-3, schedule: 'cosine', warmupSteps: 10, totalSteps: 110 }, 60);
 * // 5e-4 (half way through the decay)
 * ```
 * @throws {InvalidArgumentError} naming the field.
 */
export function learningRateAt(schedule: LearningRateSchedule, step: number): number {
  const functionName = 'learningRateAt';
  const settings = validateSchedule(schedule, functionName);
  validateInteger(step, { parameter: 'step', functionName, min: 0 });
  const { learningRate, warmupSteps, totalSteps, minLearningRateRatio: floor } = settings;
  if (step < warmupSteps) return (learningRate * step) / warmupSteps;
  if (settings.schedule === 'constant') return learningRate;
  const span = Math.max(1, totalSteps! - warmupSteps);
  const progress = Math.min(1, (step - warmupSteps) / span);
  const factor =
    settings.schedule === 'cosine' ? 0.5 * (1 + Math.cos(Math.PI * progress)) : 1 - progress;
  return learningRate * (floor + (1 - floor) * factor);
}

const SCHEDULE_KEYS = [
  'learningRate',
  'schedule',
  'warmupSteps',
  'totalSteps',
  'minLearningRateRatio',
] as const;

/**
 * Validates a schedule (unknown keys are errors) and fills its defaults; `parameter` prefixes the
 * field names in errors (e.g. `options.schedule`). @internal
 */
export function validateSchedule(
  schedule: LearningRateSchedule,
  functionName: string,
  parameter?: string,
): Required<Omit<LearningRateSchedule, 'totalSteps'>> & { totalSteps: number | undefined } {
  const name = (field: string) => (parameter === undefined ? field : `${parameter}.${field}`);
  if (schedule === null || typeof schedule !== 'object') {
    throw new InvalidArgumentError({
      parameter: parameter ?? 'schedule',
      functionName,
      value: schedule,
      expected: 'a schedule object { learningRate, … }',
    });
  }
  validateOptions(schedule, { parameter: parameter ?? '', functionName, known: SCHEDULE_KEYS });
  const learningRate = validateNumber(schedule.learningRate, {
    parameter: name('learningRate'),
    functionName,
    min: 0,
  });
  const kind = validateOneOf(
    schedule.schedule ?? SCHEDULE_DEFAULTS.schedule,
    ['constant', 'cosine', 'linear'],
    {
      parameter: name('schedule'),
      functionName,
    },
  );
  const warmupSteps = validateInteger(schedule.warmupSteps ?? SCHEDULE_DEFAULTS.warmupSteps, {
    parameter: name('warmupSteps'),
    functionName,
    min: 0,
  });
  let totalSteps: number | undefined;
  if (kind !== 'constant' || schedule.totalSteps !== undefined) {
    totalSteps = validateInteger(schedule.totalSteps, {
      parameter: name('totalSteps'),
      functionName,
      min: Math.max(1, warmupSteps),
    });
  }
  const minLearningRateRatio = validateNumber(
    schedule.minLearningRateRatio ?? SCHEDULE_DEFAULTS.minLearningRateRatio,
    {
      parameter: name('minLearningRateRatio'),
      functionName,
      min: 0,
      max: 1,
    },
  );
  return { learningRate, schedule: kind, warmupSteps, totalSteps, minLearningRateRatio };
}
