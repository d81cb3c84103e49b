import {
  custom,
  integer,
  number,
  type OptionsInput,
  object,
  optional,
  withDefault,
} from '@rlvr/options';
import { nullAsUnset } from '../null-as-unset.js';

/**
 * The options of `PolicyTrainer.grpoStep`, declared once: {@link GrpoStepOptions}, the keys,
 * defaults, validation and README table come from it. @internal
 */
export const GRPO_STEP_OPTIONS = object({
  numIterations: nullAsUnset(
    withDefault(
      integer({ min: 1 }),
      1,
      'μ: passes over the batch (PPO epochs), with the pre-update logprobs kept as π_old.',
    ),
  ),
  miniBatchSize: nullAsUnset(
    optional(integer({ min: 1 }), {
      description: 'Sequences per optimizer step.',
      defaultText: 'the whole batch (one step per iteration)',
    }),
  ),
});

/** Options of one `PolicyTrainer.grpoStep` call (see {@link GRPO_STEP_OPTIONS}). */
export type GrpoStepOptions = OptionsInput<typeof GRPO_STEP_OPTIONS>;

/**
 * The options of `PolicyTrainer.sftStep` and `logitsStep` (the batch layout), declared once; their
 * values are checked where the rows are laid out. @internal
 */
export const LAYOUT_OPTIONS = object({
  pack: optional(
    custom<boolean>(() => true, 'a boolean'),
    {
      description: 'Pack several short sequences per row (segment-masked attention).',
      defaultText: '`false`',
    },
  ),
  rowLength: optional(
    custom<number>(() => true, 'an integer >= the longest sequence'),
    {
      description: 'Row length when packing.',
      defaultText: 'the longest sequence',
    },
  ),
});

/** Options of `PolicyTrainer.sftStep` (see {@link LAYOUT_OPTIONS}). */
export type SftStepOptions = OptionsInput<typeof LAYOUT_OPTIONS>;

/** The options of `PolicyTrainer.completionLogprobs`, declared once. @internal */
export const COMPLETION_LOGPROBS_OPTIONS = object({
  temperature: optional(number({ min: 0, exclusiveMin: true }), {
    description: 'Temperature T of `log softmax(logits / T)`.',
    defaultText: "the trainer's `grpo.temperature`",
  }),
});

/** Options of `PolicyTrainer.completionLogprobs` (see {@link COMPLETION_LOGPROBS_OPTIONS}). */
export type CompletionLogprobsOptions = OptionsInput<typeof COMPLETION_LOGPROBS_OPTIONS>;
