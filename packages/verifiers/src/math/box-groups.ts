/**
 * Several boxes in one response, decided by position as a careful grader would (issue 32): the
 * text between two boxes says whether the earlier one is an intermediate result (reasoning in
 * between: `a = \boxed{3}`, `b = \boxed{5}`, so `ab = \boxed{15}`), a rejected candidate ("is
 * wrong, the real answer is"), or offered beside the last one as the final answer (nothing but
 * list words: `\boxed{2}, \boxed{3}`; an alternative: `\boxed{6} or \boxed{7}`). Internal.
 */
import type { BoxSpan } from './boxes.js';

/** What the text between two consecutive boxes makes of the earlier one. */
export type Gap =
  /** `or`, `maybe`, `alternatively`, `could`, `might`, `/`: offered as an alternative. */
  | 'alternative'
  /** `, not \boxed{7}`, `rather than`: the later box is rejected. */
  | 'reject-next'
  /** `is wrong`, `wait`, `actually`, `but`, `recheck`: the earlier box is withdrawn. */
  | 'correction'
  /** nothing but punctuation, math labels (`x =`) and list words: one final list. */
  | 'list'
  /** reasoning, a new sentence with words, a part label `(b)`: the earlier box is intermediate. */
  | 'prose';

const ALTERNATIVE = new Set([
  'or',
  'either',
  'alternatively',
  'alternative',
  'maybe',
  'perhaps',
  'possibly',
  'probably',
  'might',
  'could',
  'otherwise',
  'else',
]);
const CORRECTION = new Set([
  'no',
  'nope',
  'wait',
  'actually',
  'wrong',
  'incorrect',
  'mistake',
  'mistaken',
  'error',
  'oops',
  'sorry',
  'but',
  'however',
  'instead',
  'correction',
  'corrected',
  'recheck',
  'rechecking',
  're-check',
  'double-check',
  'double-checking',
  'reconsider',
  'reconsidering',
  'revisit',
  're-examine',
  'hmm',
]);
const LIST_WORDS = new Set(['and', 'also', 'i.e', 'ie', 'namely', 'respectively', 'both']);
const NEGATION_BEFORE = /(?:\bnot|\bnever|n't|\brather\s+than|\binstead\s+of|\bnor)\s*[$\\(\s]*$/i;
const REJECTION_AFTER =
  /^[^.\n]*?\b(?:is|are|was)\s+(?:wrong|incorrect|not\s+(?:right|correct|the\s+answer))|^[^.\n]*?\b(?:isn't|wasn't)\s+(?:right|correct)/i;
const PART_LABEL = /(?:^|[\s(])(?:\([a-hA-H]\)|\((?:i|ii|iii|iv|v|vi)\)|[a-h]\)|[Pp]art\b)/;

/** Prose words of a gap: letter runs outside LaTeX command names (`\text{ and }` → `and`). */
function gapWords(gap: string): string[] {
  const text = gap.replace(/\\[A-Za-z]+/g, ' ');
  return (text.match(/[A-Za-z][A-Za-z'.-]*[A-Za-z]|[A-Za-z]{2,}/g) ?? []).map((word) =>
    word.toLowerCase().replace(/\.$/, ''),
  );
}

export function classifyGap(gap: string): Gap {
  const words = gapWords(gap);
  // An alternative offered for the next box is said just before it ("… or maybe \boxed{7}"); an
  // "or" deep inside a long stretch of reasoning is part of the reasoning.
  const near = words.length <= 8 ? words : words.slice(-6);
  if (near.some((word) => ALTERNATIVE.has(word)) || /^[\s$)\\]*\/[\s$(\\]*$/.test(gap)) {
    return 'alternative';
  }
  if (NEGATION_BEFORE.test(gap)) return 'reject-next';
  if (words.some((word) => CORRECTION.has(word))) return 'correction';
  if (PART_LABEL.test(gap)) return 'prose';
  if (words.every((word) => LIST_WORDS.has(word))) return 'list';
  return 'prose';
}

/** True when the sentence after the last box withdraws it ("\boxed{7} is wrong"). */
export function rejectedAfter(text: string, last: BoxSpan): boolean {
  return REJECTION_AFTER.test(text.slice(last.end, last.end + 200));
}

/** The boxes read as the final answer, and the wider list a multi-valued gold may be read from. */
export type BoxGroups = {
  /** The last box and the boxes offered beside it (joined by list or alternative gaps). */
  final: BoxSpan[];
  /** True when a box of the final group is offered as an alternative or the last one rejected. */
  alternative: boolean;
  /**
   * Every box since the last correction (intermediate ones included): a gold that lists several
   * values may be answered by boxes spread over the final statements.
   */
  since: BoxSpan[];
};

export function groupBoxes(text: string, boxes: readonly BoxSpan[]): BoxGroups {
  const last = boxes.length - 1;
  let alternative = rejectedAfter(text, boxes[last]!);
  let start = last;
  let finalOpen = true;
  let since = last;
  for (let index = last - 1; index >= 0; index--) {
    const gap = classifyGap(text.slice(boxes[index]!.end, boxes[index + 1]!.start));
    if (gap === 'reject-next') {
      if (index + 1 === last) alternative = true;
      break;
    }
    if (gap === 'correction') break;
    since = index;
    if (finalOpen && (gap === 'list' || gap === 'alternative')) {
      start = index;
      if (gap === 'alternative') alternative = true;
    } else finalOpen = false;
  }
  return { final: boxes.slice(start), alternative, since: boxes.slice(since) };
}
