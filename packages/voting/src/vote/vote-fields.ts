import { func, optional } from '@rlvr/options';
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
