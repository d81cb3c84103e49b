/**
 * The answer of a response without a box and without an answer statement (issue 35): the whole
 * response when it is one expression, else the later of the last complete math span (`$…$`,
 * `$$…$$`, `\(…\)`, `\[…\]`) and the last number that stands alone. A digit inside an expression,
 * a word, a power, a fraction or an interval is never an answer: `$\frac{1+\sqrt5}{2}$` is compared
 * whole, `AZYUK2A` and `x^2` have no answer. Internal.
 */
import { groupBoxes } from './box-groups.js';
import { UNIT_WORDS } from './latex.js';
import { LATEX_THOUSANDS } from './preclean.js';
import { hasProseWord } from './structure.js';

/** What the fallback found: the answer text and where it came from. */
export type Unmarked =
  | {
      kind: 'answer';
      text: string;
      source: 'last-span' | 'last-number';
      /** Spans offered with the last one (`$2$ or $3$`, `$x = 2$ and $x = 3$`), the last included. */
      group?: { contents: string[]; alternative: boolean };
    }
  | { kind: 'hedged'; candidates: string[] }
  | { kind: 'none'; reason: string };

/**
 * A number token: thousands groups (`1,000.5`, never after a lone `0`), a decimal comma where a
 * list cannot be meant (`1000,99`, `2,74`, `0,111`: not three digits after a 1–3 digit whole part),
 * a fraction `3/4`, a decimal with or without its leading zero (`.4`).
 */
const NUMBER =
  /[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+,\d{1,2}(?![\d,])|0,\d+(?![\d,])|\d{4,},\d+(?![\d,])|\d+\/\d+|\d+(?:\.\d+)?|\.\d+/g;

const OPERATOR_BEFORE = /[+*/^×÷·<>≤≥_]$|\\[A-Za-z]+$/;
const OPERATOR_AFTER =
  /^\s*(?:[+*/^×÷·<>≤≥_=]|-\s*[\d(\p{L}]|\\(?:cdot|times|div|pm|mp|le|ge|leq|geq|lt|gt|neq|approx)\b)|^[(:]\S/u;

/** Words a bare expression may spell out (`sqrt(2)`, `ln 3`, `pi/4`). */
const SPELLED = new Set([
  'sqrt',
  'sin',
  'cos',
  'tan',
  'log',
  'ln',
  'exp',
  'pi',
  'mod',
  'inf',
  'or',
  'and',
]);

function isUnit(word: string): boolean {
  return UNIT_WORDS.has(word.toLowerCase()) || /^(?:m|g|s|h|l)$/.test(word);
}

/** The text of a number token as the parser reads it (`1000,99` → `1000.99`, `.4` → `0.4`). */
function numberText(token: string): string {
  if (/^\d+,\d+$/.test(token) && !/^[1-9]\d{0,2}(?:,\d{3})+$/.test(token)) {
    return token.replace(',', '.');
  }
  return token.startsWith('.') ? `0${token}` : token;
}

type Token = { start: number; end: number; text: string };

function numberTokens(text: string): Token[] {
  const tokens: Token[] = [];
  NUMBER.lastIndex = 0;
  for (let match = NUMBER.exec(text); match; match = NUMBER.exec(text)) {
    tokens.push({ start: match.index, end: match.index + match[0].length, text: match[0] });
  }
  return tokens;
}

/** True when the opener enclosing `at` on its line has text before `at` (`[0, 1)`, `(1+x)/2`). */
function insideBrackets(text: string, at: number): boolean {
  let depth = 0;
  for (let index = at - 1; index >= 0 && text[index] !== '\n'; index--) {
    const char = text[index]!;
    if (char === ')' || char === ']' || char === '}') depth++;
    else if (char === '(' || char === '[' || char === '{') {
      if (depth === 0) return text.slice(index + 1, at).trim() !== '';
      depth--;
    }
  }
  return false;
}

/** Why the number token is not a standalone number, or null when it is one. */
function notStandalone(text: string, token: Token): string | null {
  const before = text.slice(Math.max(0, token.start - 24), token.start);
  const after = text.slice(token.end, token.end + 24);
  if (/[\p{L}\d.]/u.test(before.at(-1) ?? '')) return 'a digit inside a word or number';
  const word = /^\p{L}+/u.exec(after)?.[0];
  if (word !== undefined && !isUnit(word)) return 'a digit inside a word';
  if (/^[\d^_{]/.test(after)) return 'a digit inside an expression';
  const previous = before.replace(/\s+$/, '');
  if (OPERATOR_BEFORE.test(previous) || /[\p{L}\d)\]}]\s*-$/u.test(previous)) {
    return 'a digit inside an expression';
  }
  if (/\d\s*:$/.test(previous)) return 'a digit inside a ratio or a time';
  if (OPERATOR_AFTER.test(after)) return 'a digit inside an expression';
  if (/^\s*[)\]]/.test(after) && insideBrackets(text, token.start)) {
    return 'a digit inside a bracket';
  }
  return null;
}

/**
 * A plain-text tuple or interval that the last number closes (`[2, 5]`, `(7, 6)`, `[0, 1)`): only
 * numbers, signs, commas and ∞ inside, nothing glued after it. Null otherwise.
 */
function plainGroup(text: string, end: number): { text: string; start: number } | null {
  const close = /^\s*[)\]]/.exec(text.slice(end));
  if (!close) return null;
  const closeAt = end + close[0].length;
  const open = Math.max(text.lastIndexOf('(', end), text.lastIndexOf('[', end));
  if (open < 0) return null;
  const group = text.slice(open, closeAt);
  const item = String.raw`\s*[-+]?(?:[\d.]+|\\?infty|∞)\s*`;
  if (!new RegExp(`^[([]${item}(?:,${item})+[)\\]]$`).test(group)) return null;
  if (/^[\p{L}\d(^_]|^\s*[+*/^=-]/u.test(text.slice(closeAt))) return null;
  if (/[\p{L}\d^_)]$/u.test(text.slice(0, open))) return null;
  return { text: group, start: open };
}

/** `12 cm^2`, `1,000.99m^{2}`: the power of a unit is not a number of the answer. */
function isUnitPower(text: string, token: Token): boolean {
  const before = text.slice(Math.max(0, token.start - 16), token.start);
  return /(?:^|[^\p{L}])([\p{L}]+)\s*\^\s*\{?\s*$/u.test(before)
    ? isUnit(/([\p{L}]+)\s*\^\s*\{?\s*$/u.exec(before)![1]!)
    : false;
}

/** Widens a token backwards over SI digit groups (`1 024`) and a mixed number's whole part. */
function widen(text: string, token: Token): Token {
  const head = text.slice(Math.max(0, token.start - 24), token.start);
  if (/^\d{3}(?:\.\d+)?$/.test(token.text)) {
    const groups = /(?:^|[^\d.,\s])\s*(\d{1,3}(?: \d{3})*) $/.exec(head);
    if (groups) {
      const start = token.start - groups[1]!.length - 1;
      return { start, end: token.end, text: text.slice(start, token.end) };
    }
  }
  const fraction = /^(\d+)\/(\d+)$/.exec(token.text);
  if (fraction && Number(fraction[1]) > 0 && Number(fraction[1]) < Number(fraction[2])) {
    const whole = /(?:^|[^\d.,/\s])\s*(\d+) $/.exec(head);
    if (whole) {
      const start = token.start - whole[1]!.length - 1;
      return { start, end: token.end, text: text.slice(start, token.end) };
    }
  }
  return token;
}

/** A minus sign that belongs to the token (`-3`, `(-3`, `= -3`), not a subtraction. */
function withSign(text: string, token: Token): Token {
  if (text[token.start - 1] !== '-') return token;
  const previous = text[token.start - 2] ?? '';
  if (/[\p{L}\d)\]}]/u.test(previous)) return token;
  return { start: token.start - 1, end: token.end, text: `-${token.text}` };
}

/**
 * The end of `text` to read an unmarked answer in: its last 16 KB from a line start (inline math
 * never spans lines, so `$` pairs are read right), with LaTeX digit groups written as commas.
 */
function prepare(text: string): string {
  let tail = text;
  if (text.length > 16_384) {
    const from = text.indexOf('\n', text.length - 16_384);
    tail = from < 0 ? text.slice(-16_384) : text.slice(from + 1);
  }
  return tail.replace(LATEX_THOUSANDS, '$1,');
}

/** The last number of (prepared) `text` that stands alone, with a `%` written after it. */
function standaloneIn(
  text: string,
): { text: string; start: number; before: string } | { reason: string } | null {
  const tokens = numberTokens(text);
  let index = tokens.length - 1;
  if (index < 0) return null;
  if (isUnitPower(text, tokens[index]!) && index > 0) index--;
  const token = withSign(text, widen(text, tokens[index]!));
  const reason = notStandalone(text, token);
  if (reason === 'a digit inside a bracket') {
    const group = plainGroup(text, token.end);
    if (group) {
      return {
        text: group.text,
        start: group.start,
        before: text.slice(0, group.start).slice(-40),
      };
    }
  }
  if (reason !== null) return { reason: `the last number is ${reason}` };
  const percent = /^\s*(?:\\?%)/.test(text.slice(token.end)) ? '%' : '';
  return {
    text: numberText(token.text) + percent,
    start: token.start,
    before: text.slice(Math.max(0, token.start - 40), token.start),
  };
}

/** The last number of `text` that stands alone (`start` is in the prepared text). */
export function lastStandaloneNumber(
  source: string,
): { text: string; start: number; before: string } | { reason: string } | null {
  return standaloneIn(prepare(source));
}

type Span = { start: number; end: number; content: string };

/** Index of the next unescaped `$` at or after `from`. */
function nextDollar(text: string, from: number): number {
  for (let index = text.indexOf('$', from); index >= 0; index = text.indexOf('$', index + 1)) {
    if (text[index - 1] !== '\\') return index;
  }
  return -1;
}

/**
 * The complete math spans of `text`, in order: `$$…$$`, `$…$` (on one line, not currency: a span
 * with prose words in it is a pair of dollar signs), `\(…\)` (one line) and `\[…\]`.
 */
export function mathSpans(text: string): Span[] {
  const spans: Span[] = [];
  // The next position of each delimiter; the scan only moves forward, so each is searched again
  // only once passed: linear in the text however the delimiters are arranged.
  const cursor = { dollar: -2, paren: -2, bracket: -2, parenClose: -2, bracketClose: -2 };
  const cursor2 = { display: -2, newline: -2 };
  const ahead = (known: number, from: number, search: () => number) =>
    known === -1 || known >= from ? known : search();
  let index = 0;
  while (index < text.length) {
    cursor.dollar = ahead(cursor.dollar, index, () => nextDollar(text, index));
    cursor.paren = ahead(cursor.paren, index, () => text.indexOf('\\(', index));
    cursor.bracket = ahead(cursor.bracket, index, () => text.indexOf('\\[', index));
    let at = -1;
    for (const candidate of [cursor.dollar, cursor.paren, cursor.bracket]) {
      if (candidate >= 0 && (at < 0 || candidate < at)) at = candidate;
    }
    if (at < 0) break;
    cursor2.newline = ahead(cursor2.newline, at, () => text.indexOf('\n', at));
    const lineEnd = cursor2.newline;
    const sameLine = (close: number) => close >= 0 && (lineEnd < 0 || close < lineEnd);
    let span: Span | null = null;
    let after = at + 1;
    if (at === cursor.dollar && text[at + 1] === '$') {
      cursor2.display = ahead(cursor2.display, at + 2, () => text.indexOf('$$', at + 2));
      const close = cursor2.display;
      if (close > 0) span = { start: at, end: close + 2, content: text.slice(at + 2, close) };
      after = close > 0 ? close + 2 : at + 2;
    } else if (at === cursor.dollar) {
      const close = nextDollar(text, at + 1);
      if (sameLine(close)) {
        const content = text.slice(at + 1, close);
        const currency = /^\s*\d/.test(content) && hasProseWord(stripText(content));
        if (!currency) {
          span = { start: at, end: close + 1, content };
          after = close + 1;
        }
      }
    } else {
      const paren = at === cursor.paren;
      const known = paren ? cursor.parenClose : cursor.bracketClose;
      const close = ahead(known, at + 2, () => text.indexOf(paren ? '\\)' : '\\]', at + 2));
      if (paren) cursor.parenClose = close;
      else cursor.bracketClose = close;
      if (close > 0 && (!paren || sameLine(close))) {
        span = { start: at, end: close + 2, content: text.slice(at + 2, close) };
        after = close + 2;
      }
    }
    if (span && span.content.trim() !== '') spans.push(span);
    index = after;
  }
  return spans;
}

/**
 * True when `at` lies between an opening `$` (or `\(`) and its closer on a later line: inline math
 * broken over lines, which the span reader does not take, so neither is a number inside it.
 */
function insideBrokenSpan(text: string, at: number): boolean {
  let dollars = 0;
  for (
    let index = nextDollar(text, 0);
    index >= 0 && index < at;
    index = nextDollar(text, index + 1)
  ) {
    if (text[index + 1] === '$') index++;
    else dollars++;
  }
  if (dollars % 2 === 1 && nextDollar(text, at) >= 0) return true;
  const open = text.lastIndexOf('\\(', at);
  return open >= 0 && text.lastIndexOf('\\)', at) < open && text.indexOf('\\)', at) >= 0;
}

/** `\text{…}` content does not make a span prose (`$5\text{ cm}$`). */
function stripText(content: string): string {
  return content.replace(/\\(?:text|mathrm|textbf|mbox)\{[^{}]*\}/g, ' ');
}

/** A span that only names a variable (`where $n$ is …`) is not an answer. */
function isMention(content: string): boolean {
  return /^\s*(?:[A-Za-z]|\\[A-Za-z]+|\\math(?:bf|rm|cal)\{[A-Za-z]\})(?:_\{?[A-Za-z0-9]+\}?)?\s*$/.test(
    content,
  );
}

/** The response is one expression: no prose words, short, with a digit or a command. */
function wholeExpression(text: string, limit: number): string | null {
  const trimmed = text.trim().replace(/[.;,]+$/, '');
  if (trimmed === '' || trimmed.length > limit || trimmed.includes('\n\n')) return null;
  const inner = trimmed.replace(/^\$+|\$+$/g, '');
  const plain = stripText(inner).replace(/_(?:\{[^{}]*\}|[A-Za-z0-9]+)/g, ' ');
  if (hasProseWord(plain)) return null;
  // short words too ("It is .4"): only function names and units may be spelled out
  for (const word of plain.matchAll(/(?<![\\A-Za-z])[A-Za-z]{2,}/g)) {
    if (!SPELLED.has(word[0].toLowerCase()) && !isUnit(word[0])) return null;
  }
  if (!/[\d\\{}()[\]=<>]/.test(inner) && !/^\s*[A-Za-z]\s*$/.test(inner)) return null;
  return inner;
}

/**
 * The unmarked answer of `text` (see the module comment); `limit` is the longest answer read.
 * "3 or 4" at the end is a hedge.
 */
export function unmarkedAnswer(text: string, limit: number): Unmarked {
  const whole = wholeExpression(text, limit);
  if (whole !== null) {
    const single = lastStandaloneNumber(whole);
    const numberOnly =
      single !== null &&
      'text' in single &&
      /^[\s$€£¥\\]*-?[\d.,/]+\s*(?:\\?%|\$)?\s*$/.test(whole);
    return numberOnly
      ? { kind: 'answer', text: single.text, source: 'last-number' }
      : { kind: 'answer', text: whole, source: 'last-span' };
  }
  const tail = prepare(text);
  const spans = mathSpans(tail).filter(
    (span) => !isMention(span.content) && span.content.length <= limit,
  );
  const span = spans.at(-1) ?? null;
  const number = standaloneIn(tail);
  const numberStart = number !== null && 'text' in number ? number.start : -1;
  if (span && span.end > numberStart) {
    const groups = groupBoxes(
      tail,
      spans.map((item) => ({ ...item, terminated: true })),
    );
    const contents = groups.final.map((item) => item.content);
    return {
      kind: 'answer',
      text: span.content,
      source: 'last-span',
      ...(contents.length > 1 ? { group: { contents, alternative: groups.alternative } } : {}),
    };
  }
  if (number === null) return { kind: 'none', reason: 'no answer found' };
  if (!('text' in number)) return { kind: 'none', reason: number.reason };
  if (insideBrokenSpan(tail, number.start)) {
    return { kind: 'none', reason: 'the last number is inside a $…$ span broken over lines' };
  }
  // "3 or 4", "x = 2 or x = 3": the last number is one of several alternatives
  const alternative =
    /(-?\d[\d,./]*)\s*(?:,\s*)?\bor\s+(?:maybe\s+|perhaps\s+)?(?:[A-Za-z](?:_\w+)?\s*=\s*)?$/i.exec(
      number.before,
    );
  if (alternative && alternative[1] !== number.text) {
    return { kind: 'hedged', candidates: [alternative[1]!, number.text] };
  }
  // "the possible values are 2, 3." / "2 and 3": a final list of numbers
  const list = /(-?\d[\d,./]*)\s*(?:,|\band\b|&)\s*$/.exec(number.before);
  const atEnd = /^\s*%?[\s.!;)]*$/.test(tail.slice(number.start + number.text.length));
  if (list && atEnd && list[1] !== number.text) {
    return { kind: 'hedged', candidates: [list[1]!.replace(/,$/, ''), number.text] };
  }
  return { kind: 'answer', text: number.text, source: 'last-number' };
}

const HEDGE_WORDS =
  /\b(?:or|nor|either|between|maybe|perhaps|possibly|probably|not|no|never|cannot)\b|n't\b/i;
const BOUND_BEFORE =
  /\b(?:least|most|than|over|under|about|approximately|around|roughly|nearly|almost|up to|more|less|fewer|below|above|exceeds?|within)\s+(?:\S+\s+){0,2}$/i;

/**
 * The one number an answer sentence states ("Jane started growing Sphere 3 hours ago" → 3), or
 * null: with no number or several, a hedge or negation ("3 or 4", "not 3"), or a bound before the
 * number ("at least 12").
 */
export function soleNumber(sentence: string): string | null {
  if (sentence.includes('$') || HEDGE_WORDS.test(sentence)) return null;
  const text = prepare(sentence);
  const tokens = numberTokens(text);
  if (tokens.length !== 1) return null;
  const number = standaloneIn(text);
  if (number === null || !('text' in number)) return null;
  return BOUND_BEFORE.test(text.slice(0, number.start)) ? null : number.text;
}
