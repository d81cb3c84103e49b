import { InvalidArgumentError, type VerifyResult, validateOptions } from '@rlvr/core';

/** Options of {@link checkR1Format}. */
export type R1FormatOptions = {
  /**
   * Whether the response must start with `<think>` (default true). Set false for chat templates that
   * put `<think>` in the prompt (the response then starts inside the thinking block).
   */
  requireThinkOpen?: boolean;
  /** Allow whitespace before the first tag and after the last (default true). */
  allowSurroundingWhitespace?: boolean;
};

/** Result of {@link checkR1Format}. */
export type R1FormatResult = VerifyResult & {
  score: 1 | 0;
  correct: boolean;
  /** The `<think>` content, when the format is valid. */
  think: string | null;
  /** The `<answer>` content, when the format is valid. */
  answer: string | null;
  violations: string[];
};

const TAGS = ['<think>', '</think>', '<answer>', '</answer>'] as const;

/** Keys of {@link R1FormatOptions}. @internal */
export const R1_FORMAT_OPTION_KEYS = ['requireThinkOpen', 'allowSurroundingWhitespace'] as const;

function count(text: string, tag: string): number {
  let found = 0;
  for (let index = text.indexOf(tag); index >= 0; index = text.indexOf(tag, index + tag.length)) {
    found++;
  }
  return found;
}

/**
 * Strict R1 format: the response is exactly `<think>T</think>` then `<answer>A</answer>`, with only
 * whitespace between and around them, each tag exactly once, and T and A not blank. Tags are
 * case-sensitive. Score 1 or 0; `violations` names what is wrong (`missing-think`,
 * `duplicate-tag`, `text-outside-tags`, `empty-think`, `empty-answer`, `wrong-order`).
 *
 * @example
 * ```ts
 * checkR1Format('<think>2+2=4</think>\n<answer>4</answer>').score; // 1
 * checkR1Format('4').violations; // ['missing-think', 'missing-answer']
 * ```
 */
export function checkR1Format(response: string, options: R1FormatOptions = {}): R1FormatResult {
  const start = performance.now();
  if (typeof response !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'response',
      functionName: 'checkR1Format',
      value: response,
      expected: 'a string',
    });
  }
  validateOptions(options, {
    parameter: 'options',
    functionName: 'checkR1Format',
    known: R1_FORMAT_OPTION_KEYS,
  });
  const requireThinkOpen = options.requireThinkOpen ?? true;
  const trimAround = options.allowSurroundingWhitespace ?? true;
  const text = trimAround ? response.trim() : response;
  const violations: string[] = [];
  const counts = TAGS.map((tag) => count(text, tag));
  const expectedOpen = requireThinkOpen ? 1 : 0;
  if (counts[0]! > expectedOpen) violations.push('duplicate-tag');
  if (requireThinkOpen && counts[0] === 0) violations.push('missing-think');
  if (counts[1] === 0) violations.push('missing-think-close');
  if (counts[2] === 0 || counts[3] === 0) violations.push('missing-answer');
  if (counts[1]! > 1 || counts[2]! > 1 || counts[3]! > 1) {
    if (!violations.includes('duplicate-tag')) violations.push('duplicate-tag');
  }
  let think: string | null = null;
  let answer: string | null = null;
  if (violations.length === 0) {
    const thinkOpen = requireThinkOpen ? text.indexOf('<think>') : -1;
    const thinkClose = text.indexOf('</think>');
    const answerOpen = text.indexOf('<answer>');
    const answerClose = text.indexOf('</answer>');
    if (!(thinkOpen < thinkClose && thinkClose < answerOpen && answerOpen < answerClose)) {
      violations.push('wrong-order');
    } else {
      if (requireThinkOpen && thinkOpen !== 0) violations.push('text-outside-tags');
      if (text.slice(thinkClose + 8, answerOpen).trim() !== '')
        violations.push('text-outside-tags');
      if (answerClose + 9 !== text.length) violations.push('text-outside-tags');
      think = text.slice(requireThinkOpen ? thinkOpen + 7 : 0, thinkClose);
      answer = text.slice(answerOpen + 8, answerClose);
      if (think.trim() === '') violations.push('empty-think');
      if (answer.trim() === '') violations.push('empty-answer');
    }
  }
  const unique = [...new Set(violations)];
  const ok = unique.length === 0;
  return {
    score: ok ? 1 : 0,
    correct: ok,
    think: ok ? think : null,
    answer: ok ? answer : null,
    extracted: ok ? answer : null,
    reason: ok
      ? 'strict <think>…</think><answer>…</answer> format'
      : `format violations: ${unique.join(', ')}`,
    violations: unique,
    timings: { totalMs: performance.now() - start },
  };
}
