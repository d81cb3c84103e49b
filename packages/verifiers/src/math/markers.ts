/**
 * Answer markers in a response (`#### 72`, `final answer is $…$`, `Final answer: …`, `The answer
 * is …`, `Answer: …`), the span of text a marker introduces, the value named by an answer
 * statement ("The largest $n$ is 34"). Internal.
 */
import { UNIT_WORDS } from './latex.js';
import { hasProseWord } from './structure.js';
import { soleNumber } from './unmarked.js';

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
  const math = leadingMath(rest);
  if (math) return withAlternative(math.content, rest.slice(math.end));
  let end = rest.indexOf('\n');
  if (end < 0) end = rest.length;
  let line = rest.slice(0, end);
  const sentence = /\.(?:\s|$)/.exec(line);
  if (sentence) line = line.slice(0, sentence.index);
  return line.replace(/\s*I hope it is correct\s*$/i, '').trim();
}

/** A `$…$` / `$$…$$` / `\(…\)` / `\[…\]` span that opens `text`: its content and end. */
function leadingMath(text: string): { content: string; end: number } | null {
  if (text.startsWith('$$')) {
    const end = text.indexOf('$$', 2);
    return end > 0 ? { content: text.slice(2, end), end: end + 2 } : null;
  }
  if (text.startsWith('$')) {
    const end = closingDollar(text, 1);
    return end > 0 ? { content: text.slice(1, end), end: end + 1 } : null;
  }
  for (const [open, close] of [
    ['\\(', '\\)'],
    ['\\[', '\\]'],
  ] as const) {
    if (text.startsWith(open)) {
      const end = text.indexOf(close, open.length);
      if (end > 0) return { content: text.slice(open.length, end), end: end + close.length };
    }
  }
  return null;
}

/** An alternative offered in the same sentence ("… is $5$ or $6$", "$5$, but it could be $6$"). */
const ALTERNATIVE_AFTER =
  /^[^.\n]*?\b(?:or|either|alternatively|maybe|perhaps|possibly|could|might)\b[^$.\n\d]*(?=\$|\\\(|-?\d)/i;

/**
 * The marker's value, or the value and the alternative after it joined by "or" (which reads as a
 * hedge, or as a list when the gold lists several values).
 */
function withAlternative(content: string, after: string): string {
  const offered = ALTERNATIVE_AFTER.exec(after);
  if (!offered) return content;
  const tail = after.slice(offered[0].length);
  const second = leadingMath(tail)?.content ?? /^-?\d[\d,./]*/.exec(tail)?.[0].replace(/[.,]$/, '');
  return second ? `${content} \\text{ or } ${second}` : content;
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
 * 34"). Else a sentence with exactly one number and no hedge, negation or bound ("Jane started
 * growing Sphere 3 hours ago" → `3`). Otherwise the span is returned unchanged (it compares as text).
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
  return soleNumber(span) ?? span;
}
