import { validateInteger, validateOneOf, validateOptions } from '@rlvr/core';
import { type BoxSpan, findBoxes } from './boxes.js';
import { DEFAULT_COMPARE_OPTIONS } from './compare.js';
import { parseCached, parsedEquivalent, safeEqual, validateString } from './equivalent.js';
import {
  ANSWER_IS,
  ANSWER_LABEL,
  answerSpan,
  FINAL_ANSWER,
  GSM8K,
  lastMatchEnd,
  lastNumber,
  MINERVA,
  statementValue,
} from './markers.js';
import type { MathValue } from './structure.js';
import { normalizeUnicode } from './unicode.js';

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

function hedgedExtraction(
  source: ExtractSource,
  candidates: string[],
  violations: string[],
  alternatives: MathValue[] | null,
): Extraction {
  return {
    answer: null,
    source,
    hedged: true,
    candidates,
    violations: [...violations, 'hedged'],
    parsed: null,
    alternatives,
  };
}

/** Items of a list or set answer (the last box may name every earlier box's value). */
function namedItems(parsed: ReturnType<typeof parseCached>): MathValue[] {
  if (!('value' in parsed)) return [];
  const value = parsed.value;
  if (value.kind === 'list' || value.kind === 'set') return value.items;
  return [value];
}

/**
 * Extraction from the boxes: the last one, unless an earlier box holds a different value that the
 * last box does not name (a hedge; its values are kept as alternatives, which verifyMath reads as a
 * list when the gold lists several values).
 */
function fromBoxes(
  boxes: BoxSpan[],
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction {
  const contents = boxes.map((box) => box.content.trim());
  const nonEmpty = boxes.filter((box) => box.content.trim() !== '');
  if (nonEmpty.length === 0) return finish('', 'boxed', contents, options, violations);
  const last = nonEmpty[nonEmpty.length - 1]!;
  if (!last.terminated || last.content.length > options.maxAnswerLength) {
    return finish('x'.repeat(options.maxAnswerLength + 1), 'boxed', contents, options, [
      ...violations,
      ...(last.terminated ? [] : ['unterminated-box']),
    ]);
  }
  if (options.multipleAnswers === 'reject' && nonEmpty.length > 1) {
    const lastText = last.content.trim();
    const lastParsed = parseCached(lastText);
    const named = namedItems(lastParsed);
    const texts = nonEmpty.map((box) => box.content.trim());
    const distinct = texts.some((content) => {
      if (content === lastText) return false;
      if (content.length > options.maxAnswerLength) return true;
      const parsed = parseCached(content);
      if (parsedEquivalent(parsed, lastParsed, DEFAULT_COMPARE_OPTIONS)) return false;
      return !(
        'value' in parsed &&
        named.some((item) => safeEqual(parsed.value, item, DEFAULT_COMPARE_OPTIONS))
      );
    });
    if (distinct) {
      const values = texts.map((content) =>
        content.length > options.maxAnswerLength ? null : parseCached(content),
      );
      const alternatives = values.every((value) => value !== null && 'value' in value)
        ? values.map((value) => (value as { value: MathValue }).value)
        : null;
      return hedgedExtraction('boxed', texts, violations, alternatives);
    }
  }
  return finish(last.content, 'boxed', contents, options, violations);
}

/** The value a marker introduces: its span, or the value named by an answer statement. */
function markedSpan(text: string, at: number, options: ResolvedExtractOptions): string {
  return statementValue(answerSpan(text, at, options.maxAnswerLength));
}

const MARKERS: readonly (readonly [ExtractSource, RegExp])[] = [
  ['gsm8k', GSM8K],
  ['minerva', MINERVA],
  ['final-answer', FINAL_ANSWER],
  ['answer-is', ANSWER_IS],
  ['answer-is', ANSWER_LABEL],
];

/** Full extraction with violations (used by verifyMath). */
export function extractDetailed(response: string, options: ResolvedExtractOptions): Extraction {
  const violations: string[] = [];
  const echo = removeEcho(
    normalizeUnicode(response),
    options.question === undefined ? undefined : normalizeUnicode(options.question),
  );
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
  const region = answerTag(text);
  const boxes = findBoxes(region ?? text, MAX_BOXES);
  if (boxes.length > 0) return fromBoxes(boxes, options, violations);
  if (region !== null) {
    const inner = region.trim();
    for (const pattern of [MINERVA, FINAL_ANSWER, ANSWER_IS, ANSWER_LABEL]) {
      const at = lastMatchEnd(inner, pattern);
      if (at >= 0) {
        return finish(markedSpan(inner, at, options), 'answer-tag', [inner], options, violations);
      }
    }
    return finish(inner, 'answer-tag', [inner], options, violations);
  }
  for (const [source, pattern] of MARKERS) {
    const at = lastMatchEnd(text, pattern);
    if (at >= 0) {
      const span = markedSpan(text, at, options);
      return finish(span, source, [span], options, violations);
    }
  }
  if (options.fallback === 'last-number') {
    const number = lastNumber(text);
    if (number !== null) {
      // "… it is 3 or 4": the last number is one of several alternatives.
      const alternative = /(-?\d[\d,.]*)\s*(?:,\s*)?\bor\s+(?:maybe\s+|perhaps\s+)?$/i.exec(
        number.before,
      );
      if (alternative && alternative[1] !== number.text) {
        return hedgedExtraction('last-number', [alternative[1]!, number.text], violations, null);
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
