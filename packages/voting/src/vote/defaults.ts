import { extractAnswer, mathEquivalent } from '@rlvr/verifiers';
import type { EqualsFn, ExtractFn } from './types.js';

/**
 * The default extractor: the math verifier's final-answer extraction. Empty and hedged answers
 * ("\\boxed{1} or \\boxed{2}", "A or B") give `null`, so they do not vote.
 */
export const defaultExtract: ExtractFn = (text) => {
  const extracted = extractAnswer(text);
  if (extracted.hedged || extracted.answer === null) return null;
  const answer = extracted.answer.trim();
  return answer.length > 0 ? answer : null;
};

/** The default equivalence: the math verifier's (0.5, 1/2 and \\frac{1}{2} are one answer). */
export const defaultEquals: EqualsFn = (a, b) => a === b || mathEquivalent(a, b);
