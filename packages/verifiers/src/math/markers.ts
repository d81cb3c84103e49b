/**
 * Answer markers in a response (`#### 72`, `final answer is $…$`, `Final answer: …`, `The answer
 * is …`, `Answer: …`), the span of text a marker introduces, the value named by an answer
 * statement ("The largest $n$ is 34"), and the last-number fallback. Internal.
 */
import { UNIT_WORDS } from './latex.js';
import { hasProseWord } from './structure.js';

export const MINERVA = /final answer is\s*(?=\$)/gi;
export const FINAL_ANSWER = /final answer\s*(?:is)?\s*[:：]\s*/gi;
/**
 * `The answer is`, `the answer, therefore, is`, `the answer to the question is`, `the correct
 * option is`, `the right choices are`.
 */
export const ANSWER_IS =
  /\b(?:answer(?:[ \t]*,[ \t]*[A-Za-z]+[ \t]*,|[ \t]+(?:to|for|of)[ \t]+(?:the|this|that|our|each)(?:[ \t]+[A-Za-z]+){1,2})?|(?:correct|right|best)[ \t]+(?:answer|option|choice)s?)\s+(?:is|are|=)\s*:?\s*/gi;
export const GSM8K = /####\s*/g;
export const ANSWER_LABEL = /\banswer\s*[:：]\s*/gi;

/** Start offset (just after the marker) of the last match of `pattern` in `text`, or -1. */
export function lastMatchEnd(text: string, pattern: RegExp): number {
  pattern.lastIndex = 0;
  let end = -1;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    end = match.index + match[0].length;
    if (match[0].length === 0) pattern.lastIndex++;
  }
  return end;
}

/** Index of the `$` closing an inline math span opened before `from` (`\$` is a dollar sign). */
function closingDollar(text: string, from: number): number {
  for (let index = text.indexOf('$', from); index >= 0; index = text.indexOf('$', index + 1)) {
    if (text[index - 1] !== '\\') return index;
  }
  return -1;
}

/**
 * The answer text that starts at `start`: a `$…$` / `\(…\)` / `\[…\]` span when one opens there,
 * else the rest of the line up to a sentence end (`. ` — a decimal point is not one).
 */
export function answerSpan(text: string, start: number, limit: number): string {
  let index = start;
  while (index < text.length && (text[index] === ' ' || text[index] === '\t')) index++;
  const rest = text.slice(index, index + limit * 2 + 8);
  if (rest.startsWith('$$')) {
    const end = rest.indexOf('$$', 2);
    if (end > 0) return rest.slice(2, end);
  } else if (rest.startsWith('$')) {
    const end = closingDollar(rest, 1);
    if (end > 0) return rest.slice(1, end);
  }
  for (const [open, close] of [
    ['\\(', '\\)'],
    ['\\[', '\\]'],
  ] as const) {
    if (rest.startsWith(open)) {
      const end = rest.indexOf(close, open.length);
      if (end > 0) return rest.slice(open.length, end);
    }
  }
  let end = rest.indexOf('\n');
  if (end < 0) end = rest.length;
  let line = rest.slice(0, end);
  const sentence = /\.(?:\s|$)/.exec(line);
  if (sentence) line = line.slice(0, sentence.index);
  return line.replace(/\s*I hope it is correct\s*$/i, '').trim();
}

/** Words that end an answer statement's value being a single value ("34 or 35", "not 34"). */
const STOP_WORDS = new Set([
  'or',
  'and',
  'not',
  'nor',
  'than',
  'to',
  'plus',
  'minus',
  'times',
  'but',
  'if',
  'except',
  'instead',
  'least',
  'most',
  'less',
  'more',
  'between',
  'either',
  'maybe',
  'perhaps',
  'possibly',
  'probably',
  'about',
  'approximately',
  'around',
  'roughly',
  'nearly',
  'almost',
  'over',
  'under',
  'divided',
  'multiplied',
  'squared',
  'cubed',
]);

/** A verb or connective after which an answer statement names its value. */
const COPULA =
  /(?:^|[\s,])(?:is|are|was|were|equals|be|becomes|that|gives|giving|yields|=|:)(?=\s|\$|$)/gi;

/** One value: a `$…$` span, a grouped number (`1 000`), a mixed number (`4 4/9`), or a token. */
const VALUE =
  /^(?:\$[^$]+\$|\\\(.+?\\\)|[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?|[-+]?\d+ \d+\/\d+|[^\s$]+)/;

/** True when `tail` is one value, optionally followed by up to three plain words (units). */
function isSingleValue(tail: string): boolean {
  const value = VALUE.exec(tail);
  if (!value) return false;
  const head = value[0];
  if (!head.startsWith('$') && !head.startsWith('\\(') && !/[\d\\]|^\(?[A-J]\)?$/.test(head)) {
    return false;
  }
  const rest = tail.slice(head.length).trim();
  if (rest === '') return true;
  const words = rest.split(/\s+/);
  return (
    words.length <= 3 &&
    words.every(
      (word) =>
        /^[A-Za-z][A-Za-z'-]*$/.test(word) &&
        !STOP_WORDS.has(word.toLowerCase()) &&
        (UNIT_WORDS.has(word.toLowerCase()) || word.length > 2),
    )
  );
}

/**
 * The value an answer statement names: "The largest $n$ is 34" → `34`, "there are 15 ways" →
 * `15 ways`. Only for a span with prose words; the value is what follows the last copula ("is",
 * "are", "equals", "that", "=", ":") when it is one value (not "34 or 35", "not 34", "at least
 * 34"). Otherwise the span is returned unchanged (and compares as text).
 */
export function statementValue(span: string): string {
  const outsideMath = span.replace(/\$[^$]*\$/g, ' ');
  if (!hasProseWord(outsideMath)) return span;
  COPULA.lastIndex = 0;
  const ends: number[] = [];
  for (let match = COPULA.exec(span); match; match = COPULA.exec(span)) {
    ends.push(match.index + match[0].length);
  }
  for (let index = ends.length - 1; index >= 0; index--) {
    const tail = span
      .slice(ends[index])
      .trim()
      .replace(/[.,;:!]+$/, '');
    if (tail !== '' && isSingleValue(tail)) return tail;
  }
  return span;
}

/** Digit-group separators written in LaTeX or Unicode spaces → `,` (for the last-number scan). */
const LATEX_GROUPS = /(\d)(?:,\\!|\{,\}|\\[,;: !]|[\u00a0\u2009\u202f])(?=\d{3}(?!\d))/g;

/**
 * The last number in `text` (`-1,234.5`, `12{,}500`, `3/4`), scanning backwards, with the 40
 * characters before it (to spot "3 or 4").
 */
export function lastNumber(text: string): { text: string; before: string } | null {
  let last = text.length - 1;
  while (last >= 0) {
    const code = text.charCodeAt(last);
    if (code >= 48 && code <= 57) break;
    last--;
  }
  if (last < 0) return null;
  const grouped = text.slice(Math.max(0, last - 4096), last + 1).replace(LATEX_GROUPS, '$1,');
  const end = grouped.length;
  let start = end - 1;
  while (start > 0) {
    const char = grouped[start - 1]!;
    if (/[\d.]/.test(char)) start--;
    else if (
      char === ',' &&
      /\d/.test(grouped[start - 2] ?? '') &&
      /^\d{3}(?!\d)/.test(grouped.slice(start, start + 4))
    )
      start--;
    else if (char === '/' && /\d/.test(grouped[start - 2] ?? '')) start--;
    else break;
  }
  start = widenBackwards(grouped, start, end);
  if (grouped[start - 1] === '-' && !/[\dA-Za-z]/.test(grouped[start - 2] ?? '')) start--;
  const number = grouped.slice(start, end).replace(/^\.+/, '');
  if (number === '') return null;
  return { text: number, before: grouped.slice(Math.max(0, start - 40), start) };
}

/**
 * Widens a number that ends the text backwards over SI digit groups (`1 024` → whole) and the
 * whole part of a mixed number (`5 3/4`, a proper fraction).
 */
function widenBackwards(text: string, start: number, end: number): number {
  const number = text.slice(start, end);
  const head = text.slice(Math.max(0, start - 24), start);
  if (/^\d{3}(?:\.\d+)?$/.test(number)) {
    const groups = /(?:^|[^\d.,\s])\s*(\d{1,3}(?: \d{3})*) $/.exec(head);
    if (groups) return start - groups[1]!.length - 1;
  }
  const fraction = /^(\d+)\/(\d+)$/.exec(number);
  if (fraction && Number(fraction[1]) > 0 && Number(fraction[1]) < Number(fraction[2])) {
    const whole = /(?:^|[^\d.,/\s])\s*(\d+) $/.exec(head);
    if (whole) return start - whole[1]!.length - 1;
  }
  return start;
}
