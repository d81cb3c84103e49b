import { assertSampler, type Prompt, type Sampler } from '@rlvr/core';
import { asserted, custom, func, optional, required } from '@rlvr/options';
import type { EqualsFn, ExtractFn } from './types.js';

/**
 * The answer fields every vote takes (`extract`, `equals`), declared once and spread into each
 * vote's options schema.
 */
export const ANSWER_FIELDS = {
  extract: optional(func<ExtractFn>('a function'), {
    description: 'Answer extractor: pulls the final answer out of a sample; `null` for none.',
    defaultText: "the math verifier's (`extractAnswer` of @rlvr/verifiers)",
  }),
  equals: optional(func<EqualsFn>('a function'), {
    description: 'Answer equivalence (symmetric).',
    defaultText: "the math verifier's (`mathEquivalent` of @rlvr/verifiers)",
  }),
};

/** The sampler of the votes that sample (`vote`, `adaptiveVote`, `deepConfOnline`, `allocateVotes`). */
export const SAMPLER_FIELD = required(
  asserted<Sampler>(
    (value, parameter) => assertSampler(value, parameter),
    'a Sampler (an object with a sample() method)',
  ),
  'Any core `Sampler` (local, served or queue-backed).',
);

/** The prompt of a vote that samples. */
export const PROMPT_FIELD = required(
  custom<Prompt>(() => true, "a Prompt (the sampler's input)"),
  'The prompt (text or token ids), passed to the sampler.',
);

/** The abort signal of a vote that samples. */
export const SIGNAL_FIELD = optional(
  custom<AbortSignal>(() => true, 'an AbortSignal'),
  'Cancels the vote.',
);
