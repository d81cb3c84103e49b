import { validateInteger, validateOneOf, validateOptions } from '@rlvr/core';
import { DEFAULT_COMPARE_OPTIONS } from './compare.js';
import { parseCached, parsedEquivalent, validateString } from './equivalent.js';
import type { MathValue } from './structure.js';

/** Where an answer was found, in priority order (see {@link extractAnswer}). */
export type ExtractSource =
  | 'boxed'
  | 'answer-tag'
  | 'gsm8k'
  | 'minerva'
  | 'final-answer'
  | 'answer-is'
  | 'last-number'
  | 'none';

/** Options of {@link extractAnswer} (and of the extraction step of `verifyMath`). */
export type ExtractOptions = {
  /** What to use when no marker is found: the last number in the response, or nothing. Default `'last-number'`. */
  fallback?: 'last-number' | 'none';
  /**
   * Several boxed answers that are not all equivalent: `'reject'` (default) marks the response as
   * hedged (no answer); `'last'` takes the last box.
   */
  multipleAnswers?: 'reject' | 'last';
  /**
   * The question text. Verbatim copies of it (20+ characters) are removed from the response before
   * extraction, so an echoed question cannot supply the answer.
   */
  question?: string;
  /** Longest answer accepted, in characters (default 1000); longer ones are rejected. */
  maxAnswerLength?: number;
};

/** Result of {@link extractAnswer}. */
export type ExtractedAnswer = {
  /** The answer text (LaTeX kept, math delimiters stripped), or null when none was usable. */
  answer: string | null;
  /** Where it came from (`'none'` when nothing was found). */
  source: ExtractSource;
  /** True when the response commits to several different answers (`\boxed{1} … \boxed{2}`, `1 or 2`). */
  hedged: boolean;
  /** Every candidate found at the chosen source (e.g. each box's content), in order. */
  candidates: string[];
};

/** Internal extraction result with the reasons verifyMath reports. */
export type Extraction = ExtractedAnswer & {
  violations: string[];
  /** The parsed answer when `answer` is set. */
  parsed: ReturnType<typeof parseCached> | null;
  /** Alternatives when the answer hedges with "or" (verifyMath may read them as a set). */
  alternatives: MathValue[] | null;
};

type ResolvedExtractOptions = Required<Omit<ExtractOptions, 'question'>> & { question?: string };

const DEFAULTS: ResolvedExtractOptions = {
  fallback: 'last-number',
  multipleAnswers: 'reject',
  maxAnswerLength: 1000,
};

const MAX_BOXES = 16;
const MIN_ECHO_LENGTH = 20;

/** Keys of {@link ExtractOptions}. @internal */
export const EXTRACT_OPTION_KEYS = [
  'fallback',
  'multipleAnswers',
  'question',
  'maxAnswerLength',
] as const;

export function resolveExtractOptions(
  options: ExtractOptions | undefined,
  functionName: string,
): ResolvedExtractOptions {
  if (options === undefined) return DEFAULTS;
  if (typeof options !== 'object' || options === null) {
    validateOneOf(options, [], { parameter: 'options', functionName });
  }
  return {
    fallback:
      options.fallback === undefined
        ? DEFAULTS.fallback
        : validateOneOf(options.fallback, ['last-number', 'none'], {
            parameter: 'options.fallback',
            functionName,
          }),
    multipleAnswers:
      options.multipleAnswers === undefined
        ? DEFAULTS.multipleAnswers
        : validateOneOf(options.multipleAnswers, ['reject', 'last'], {
            parameter: 'options.multipleAnswers',
            functionName,
          }),
    maxAnswerLength:
      options.maxAnswerLength === undefined
        ? DEFAULTS.maxAnswerLength
        : validateInteger(options.maxAnswerLength, {
            parameter: 'options.maxAnswerLength',
            functionName,
            min: 1,
          }),
    ...(options.question === undefined
      ? {}
      : { question: validateString(options.question, 'options.question', functionName) }),
  };
}

type Span = { start: number; end: number; content: string; terminated: boolean };

/** The last `MAX_BOXES` `\boxed`/`\fbox` groups in `text`, outermost only, in order. */
function findBoxes(text: string, scanLimit: number): Span[] {
  const starts: number[] = [];
  for (const command of ['\\boxed', '\\fbox']) {
    let index = text.lastIndexOf(command);
    let found = 0;
    while (index >= 0 && found < MAX_BOXES * 2) {
      const after = text.charCodeAt(index + command.length);
      const isLetter = (after >= 65 && after <= 90) || (after >= 97 && after <= 122);
      if (!isLetter) {
        starts.push(index);
        found++;
      }
      index = index === 0 ? -1 : text.lastIndexOf(command, index - 1);
    }
  }
  starts.sort((a, b) => a - b);
  const spans: Span[] = [];
  for (const start of starts.slice(-MAX_BOXES * 2)) {
    const command = text.startsWith('\\boxed', start) ? '\\boxed' : '\\fbox';
    let cursor = start + command.length;
    while (text[cursor] === ' ') cursor++;
    if (text[cursor] === '{') {
      let depth = 0;
      let end = -1;
      const limit = Math.min(text.length, cursor + scanLimit);
      for (let index = cursor; index < limit; index++) {
        const char = text[index];
        if (char === '\\') {
          index++;
          continue;
        }
        if (char === '{') depth++;
        else if (char === '}') {
          depth--;
          if (depth === 0) {
            end = index;
            break;
          }
        }
      }
      if (end < 0) {
        spans.push({
          start,
          end: limit,
          content: text.slice(cursor + 1, limit),
          terminated: false,
        });
      } else {
        spans.push({ start, end: end + 1, content: text.slice(cursor + 1, end), terminated: true });
      }
    } else {
      // \boxed 5 — a single token
      let end = cursor;
      while (end < text.length && end - cursor < scanLimit && !/[\s$]/.test(text[end]!)) end++;
      spans.push({ start, end, content: text.slice(cursor, end), terminated: end > cursor });
    }
  }
  // Drop boxes nested inside another box.
  const outer = spans.filter(
    (span) =>
      !spans.some((other) => other !== span && other.start < span.start && other.end >= span.end),
  );
  return outer.slice(-MAX_BOXES);
}

/** The last `<answer>…</answer>` content, or null. */
function answerTag(text: string): string | null {
  const lower = text.length > 2_000_000 ? text.slice(-2_000_000).toLowerCase() : text.toLowerCase();
  const offset = text.length - lower.length;
  const close = lower.lastIndexOf('</answer>');
  if (close < 0) return null;
  const open = lower.lastIndexOf('<answer>', close);
  if (open < 0) return null;
  return text.slice(offset + open + '<answer>'.length, offset + close);
}

/**
 * The answer text that starts at `start`: a `$…$` / `\(…\)` / `\[…\]` span when one opens there,
 * else the rest of the line up to a sentence end (`. ` — a decimal point is not one).
 */
function answerSpan(text: string, start: number, limit: number): string {
  let index = start;
  while (index < text.length && (text[index] === ' ' || text[index] === '\t')) index++;
  const rest = text.slice(index, index + limit * 2 + 8);
  for (const [open, close] of [
    ['$$', '$$'],
    ['$', '$'],
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

/** Start offset (just after the marker) of the last match of `pattern` in `text`, or -1. */
function lastMatchEnd(text: string, pattern: RegExp): number {
  pattern.lastIndex = 0;
  let end = -1;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    end = match.index + match[0].length;
    if (match[0].length === 0) pattern.lastIndex++;
  }
  return end;
}

const MINERVA = /final answer is\s*(?=\$)/gi;
const FINAL_ANSWER = /final answer\s*(?:is)?\s*[:：]\s*/gi;
const ANSWER_IS = /\banswer\s+(?:is|=)\s*:?\s*/gi;
const GSM8K = /####\s*/g;
const ANSWER_LABEL = /\banswer\s*[:：]\s*/gi;

/** The last number in `text` (`-1,234.5`, `3/4`), scanning backwards. */
function lastNumber(text: string): { text: string; start: number } | null {
  let index = text.length - 1;
  while (index >= 0) {
    const code = text.charCodeAt(index);
    if (code >= 48 && code <= 57) break;
    index--;
  }
  if (index < 0) return null;
  const end = index + 1;
  let start = index;
  while (start > 0) {
    const char = text[start - 1]!;
    if (/[\d.]/.test(char)) start--;
    else if (
      char === ',' &&
      /\d/.test(text[start - 2] ?? '') &&
      /^\d{3}(?!\d)/.test(text.slice(start, start + 4))
    )
      start--;
    else if (char === '/' && /\d/.test(text[start - 2] ?? '')) start--;
    else break;
  }
  if (text[start - 1] === '-' && !/[\dA-Za-z]/.test(text[start - 2] ?? '')) start--;
  const number = text.slice(start, end).replace(/^\.+/, '');
  return number === '' ? null : { text: number, start };
}

/** Removes verbatim copies of the question; reports whether the response was only an echo. */
function removeEcho(
  text: string,
  question: string | undefined,
): { text: string; echoOnly: boolean } {
  const trimmed = question?.trim() ?? '';
  if (trimmed.length < MIN_ECHO_LENGTH || !text.includes(trimmed)) return { text, echoOnly: false };
  const rest = text.split(trimmed).join('\n');
  return { text: rest, echoOnly: rest.trim().length === 0 };
}

function finish(
  answer: string,
  source: ExtractSource,
  candidates: string[],
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction {
  const trimmed = answer.trim();
  if (trimmed === '' || /^\\?(?:\{\s*\}|\s)*$/.test(trimmed)) {
    return {
      answer: null,
      source,
      hedged: false,
      candidates,
      violations: [...violations, 'empty-answer'],
      parsed: null,
      alternatives: null,
    };
  }
  if (trimmed.length > options.maxAnswerLength) {
    return {
      answer: null,
      source,
      hedged: false,
      candidates,
      violations: [...violations, 'answer-too-long'],
      parsed: null,
      alternatives: null,
    };
  }
  const parsed = parseCached(trimmed);
  if ('value' in parsed && parsed.value.kind === 'alternatives') {
    return {
      answer: null,
      source,
      hedged: true,
      candidates,
      violations: [...violations, 'hedged'],
      parsed,
      alternatives: parsed.value.items,
    };
  }
  return {
    answer: trimmed,
    source,
    hedged: false,
    candidates,
    violations,
    parsed,
    alternatives: null,
  };
}

/** Full extraction with violations (used by verifyMath). */
export function extractDetailed(response: string, options: ResolvedExtractOptions): Extraction {
  const violations: string[] = [];
  const echo = removeEcho(response, options.question);
  if (echo.echoOnly) {
    return {
      answer: null,
      source: 'none',
      hedged: false,
      candidates: [],
      violations: ['question-echo'],
      parsed: null,
      alternatives: null,
    };
  }
  const text = echo.text;
  const scanLimit = options.maxAnswerLength * 4 + 64;
  const region = answerTag(text);
  const boxes = findBoxes(region ?? text, scanLimit);
  if (boxes.length > 0) {
    const unterminated = boxes.some((box) => !box.terminated);
    const contents = boxes.map((box) => box.content.trim());
    const nonEmpty = boxes.filter((box) => box.content.trim() !== '');
    if (nonEmpty.length === 0) return finish('', 'boxed', contents, options, violations);
    const last = nonEmpty[nonEmpty.length - 1]!;
    if (!last.terminated || last.content.length > options.maxAnswerLength) {
      return finish('x'.repeat(options.maxAnswerLength + 1), 'boxed', contents, options, [
        ...violations,
        ...(unterminated ? ['unterminated-box'] : []),
      ]);
    }
    if (options.multipleAnswers === 'reject' && nonEmpty.length > 1) {
      const lastParsed = parseCached(last.content.trim());
      const distinct = nonEmpty.some((box) => {
        const content = box.content.trim();
        if (content === last.content.trim()) return false;
        if (content.length > options.maxAnswerLength) return true;
        return !parsedEquivalent(parseCached(content), lastParsed, DEFAULT_COMPARE_OPTIONS);
      });
      if (distinct) {
        return {
          answer: null,
          source: 'boxed',
          hedged: true,
          candidates: nonEmpty.map((box) => box.content.trim()),
          violations: [...violations, 'hedged'],
          parsed: null,
          alternatives: null,
        };
      }
    }
    return finish(last.content, 'boxed', contents, options, violations);
  }
  if (region !== null) {
    const inner = region.trim();
    for (const pattern of [MINERVA, FINAL_ANSWER, ANSWER_IS, ANSWER_LABEL]) {
      const at = lastMatchEnd(inner, pattern);
      if (at >= 0)
        return finish(
          answerSpan(inner, at, options.maxAnswerLength),
          'answer-tag',
          [inner],
          options,
          violations,
        );
    }
    return finish(inner, 'answer-tag', [inner], options, violations);
  }
  const markers: [ExtractSource, RegExp][] = [
    ['gsm8k', GSM8K],
    ['minerva', MINERVA],
    ['final-answer', FINAL_ANSWER],
    ['answer-is', ANSWER_IS],
    ['answer-is', ANSWER_LABEL],
  ];
  for (const [source, pattern] of markers) {
    const at = lastMatchEnd(text, pattern);
    if (at >= 0) {
      const span = answerSpan(text, at, options.maxAnswerLength);
      return finish(span, source, [span], options, violations);
    }
  }
  if (options.fallback === 'last-number') {
    const number = lastNumber(text);
    if (number !== null) {
      // "… it is 3 or 4": the last number is one of several alternatives.
      const before = text.slice(Math.max(0, number.start - 40), number.start);
      const alternative = /(-?\d[\d,.]*)\s*(?:,\s*)?\bor\s+(?:maybe\s+|perhaps\s+)?$/i.exec(before);
      if (alternative && alternative[1] !== number.text) {
        return {
          answer: null,
          source: 'last-number',
          hedged: true,
          candidates: [alternative[1]!, number.text],
          violations: [...violations, 'hedged'],
          parsed: null,
          alternatives: null,
        };
      }
      return finish(number.text, 'last-number', [number.text], options, violations);
    }
  }
  return {
    answer: null,
    source: 'none',
    hedged: false,
    candidates: [],
    violations: [...violations, 'no-answer'],
    parsed: null,
    alternatives: null,
  };
}

/**
 * Finds the final answer in a model response. Priority (the first that applies wins):
 *
 * 1. the last `\boxed{…}` / `\fbox{…}` (nested braces; inside the last `<answer>…</answer>` when
 *    the response has one);
 * 2. the content of the last `<answer>…</answer>` (narrowed by the markers below when present);
 * 3. GSM8K `#### 72`;
 * 4. Minerva `final answer is $…$`;
 * 5. `Final answer: …`;
 * 6. `The answer is …`;
 * 7. the last number in the response (`options.fallback`, default on).
 *
 * Markers 3–6 take the last occurrence and read a `$…$` span or the rest of the sentence. The
 * answer is null when nothing was found, the answer is empty or longer than `maxAnswerLength`, or
 * the response hedges (`\boxed{1} … \boxed{2}` with different values, `1 or 2`, `A or B`). Never
 * throws on response text.
 *
 * @example
 * ```ts
 * extractAnswer('... so the total is \\boxed{\\frac{3}{4}}.');
 * // { answer: '\\frac{3}{4}', source: 'boxed', hedged: false, candidates: ['\\frac{3}{4}'] }
 * extractAnswer('It is \\boxed{1} or \\boxed{2}').hedged; // true
 * ```
 * @throws {InvalidArgumentError} for a non-string response or invalid options.
 */
export function extractAnswer(response: string, options?: ExtractOptions): ExtractedAnswer {
  validateString(response, 'response', 'extractAnswer');
  validateOptions(options, {
    parameter: 'options',
    functionName: 'extractAnswer',
    known: EXTRACT_OPTION_KEYS,
  });
  const resolved = resolveExtractOptions(options, 'extractAnswer');
  const { answer, source, hedged, candidates } = extractDetailed(response, resolved);
  return { answer, source, hedged, candidates };
}
