import { InvalidArgumentError, validateInteger } from '@rlvr/core';
import {
  custom,
  expecting,
  integer,
  number,
  type OptionsInput,
  object,
  oneOf,
  optional,
  parseOptions,
  required,
  withDefault,
} from '@rlvr/options';
import { nullAsUnset, withoutUnsetNulls } from '../null-as-unset.js';

/** Learning-rate schedule after the warm-up (Hugging Face `lr_scheduler_type` names). */
export type ScheduleKind = 'constant' | 'cosine' | 'linear';

const SCHEDULE_KINDS = ['constant', 'cosine', 'linear'] as const satisfies readonly ScheduleKind[];
const SCHEDULE_OBJECT = 'a schedule object { learningRate, … }';

/**
 * The fields of a learning-rate schedule, declared once: {@link LearningRateSchedule}, the
 * defaults (`SCHEDULE_DEFAULTS`), the validation and the README table come from them. `totalSteps`
 * is checked after the fields (its range depends on `warmupSteps`). @internal
 */
export const SCHEDULE_FIELDS = {
  learningRate: required(number({ min: 0 }), 'Peak learning rate [`learning_rate`].'),
  schedule: nullAsUnset(
    withDefault(
      oneOf(SCHEDULE_KINDS),
      'constant',
      "Shape after the warm-up [`lr_scheduler_type`]; Hugging Face's default is `linear`, ours `constant` (no `totalSteps` needed).",
    ),
  ),
  warmupSteps: nullAsUnset(
    withDefault(
      integer({ min: 0 }),
      0,
      'Linear warm-up from 0 over this many steps [`warmup_steps`].',
    ),
  ),
  totalSteps: optional(
    custom<number>(() => true, 'an integer >= max(1, warmupSteps)'),
    {
      description: 'Total optimizer steps; required by `cosine` and `linear`.',
      defaultText: 'required by `cosine` / `linear`',
    },
  ),
  minLearningRateRatio: nullAsUnset(
    withDefault(number({ min: 0, max: 1 }), 0, 'Floor of the decay as a fraction of the peak.'),
  ),
};

/** The schedule's schema (see {@link SCHEDULE_FIELDS}). @internal */
export const SCHEDULE_SCHEMA = expecting(object(SCHEDULE_FIELDS), SCHEDULE_OBJECT);

/** Options of {@link learningRateAt} (the `schedule` option of the trainers). */
export type LearningRateSchedule = OptionsInput<typeof SCHEDULE_SCHEMA>;

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

/**
 * Validates a schedule (unknown keys are errors) and fills its defaults; `parameter` prefixes the
 * field names in errors (e.g. `options.schedule`). @internal
 */
export function validateSchedule(
  schedule: LearningRateSchedule,
  functionName: string,
  parameter?: string,
): Required<Omit<LearningRateSchedule, 'totalSteps'>> & { totalSteps: number | undefined } {
  if (schedule === null || typeof schedule !== 'object') {
    throw new InvalidArgumentError({
      parameter: parameter ?? 'schedule',
      functionName,
      value: schedule,
      expected: SCHEDULE_OBJECT,
    });
  }
  const parsed = parseOptions(SCHEDULE_SCHEMA, withoutUnsetNulls(SCHEDULE_SCHEMA, schedule), {
    parameter: parameter ?? '',
    functionName,
  });
  const { learningRate, schedule: kind, warmupSteps, minLearningRateRatio } = parsed;
  let totalSteps: number | undefined;
  // cross-field: cosine and linear need totalSteps, at least the warm-up
  if (kind !== 'constant' || schedule.totalSteps !== undefined) {
    totalSteps = validateInteger(schedule.totalSteps, {
      parameter: parameter === undefined ? 'totalSteps' : `${parameter}.totalSteps`,
      functionName,
      min: Math.max(1, warmupSteps),
    });
  }
  return { learningRate, schedule: kind, warmupSteps, totalSteps, minLearningRateRatio };
}
