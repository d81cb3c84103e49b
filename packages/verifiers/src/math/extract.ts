import { validateInteger, validateOneOf, validateOptions } from '@rlvr/core';
import { findBoxes } from './boxes.js';
import { parseCached, validateString } from './equivalent.js';
import { contentsDiffer, finalStatementAfter, fromBoxes } from './extract-boxes.js';
import {
  type ExtractedAnswer,
  type Extraction,
  type ExtractSource,
  finish,
  hedgedExtraction,
  markedSpan,
  type ResolvedExtractOptions,
} from './extraction.js';
import { ANSWER_IS, ANSWER_LABEL, FINAL_ANSWER, GSM8K, lastMatchEnd, MINERVA } from './markers.js';
import type { MathValue } from './structure.js';
import { normalizeUnicode } from './unicode.js';
import { unmarkedAnswer } from './unmarked.js';

export type { ExtractedAnswer, Extraction, ExtractSource };

/** Options of {@link extractAnswer} (and of the extraction step of `verifyMath`). */
export type ExtractOptions = {
  /**
   * What to use when there is no box and no answer marker: `'last-number'` (default) takes the
   * whole response when it is one expression, else the later of the last complete math span and
   * the last number that stands alone (never a digit out of an expression or a word); `'none'`
   * finds nothing.
   */
  fallback?: 'last-number' | 'none';
  /**
   * Several boxes: `'reject'` (default) decides by position — the last box is the answer unless a
   * different box is offered beside it (`\\boxed{6} or \\boxed{7}`, a final list of boxes), which
   * hedges; boxes before reasoning or a correction are intermediate. `'last'` takes the last box.
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
      boxLists: [],
    };
  }
  const text = endOfTurn(echo.text);
  const region = answerTag(text);
  if (region !== null) return fromAnswerTag(region, options, violations);
  const scope = afterThink(text);
  const found = extractFrom(scope, options, violations);
  if (found.source === 'none' && scope !== text) {
    const whole = extractFrom(text, options, violations);
    if (whole.source !== 'none') return whole;
  }
  return found;
}

/** Chat-template tokens that end the model's turn: nothing after one belongs to the response. */
const END_OF_TURN = [
  '<|im_end|>',
  '<|im_start|>',
  '<|endoftext|>',
  '<|eot_id|>',
  '<|start_header_id|>',
  '<|end|>',
  '<end_of_turn>',
  '<start_of_turn>',
  '</s>',
  '<｜end▁of▁sentence｜>',
];

/** The response up to its first end-of-turn token (one at the very start is a header, skipped). */
export function endOfTurn(text: string): string {
  let end = text.length;
  for (const token of END_OF_TURN) {
    for (let at = text.indexOf(token); at >= 0 && at < end; at = text.indexOf(token, at + 1)) {
      if (text.slice(0, at).trim() !== '') {
        end = at;
        break;
      }
    }
  }
  return text.slice(0, end);
}

/** The text after the last `</think>` when there is any; else the whole response. */
function afterThink(text: string): string {
  const close = text.lastIndexOf('</think>');
  if (close < 0) return text;
  const after = text.slice(close + '</think>'.length);
  return after.trim() === '' ? text : after;
}

/** `<answer>…</answer>`: its boxes, else its markers, else its whole content. */
function fromAnswerTag(
  region: string,
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction {
  const boxes = findBoxes(region, MAX_BOXES);
  if (boxes.length > 0) return fromBoxes(region, boxes, options, violations);
  const inner = region.trim();
  for (const pattern of [MINERVA, FINAL_ANSWER, ANSWER_IS, ANSWER_LABEL]) {
    const at = lastMatchEnd(inner, pattern);
    if (at >= 0) {
      return finish(markedSpan(inner, at, options), 'answer-tag', [inner], options, violations);
    }
  }
  return finish(inner, 'answer-tag', [inner], options, violations);
}

/** The parsed values of some answers, or null when one cannot be read. */
function parsedValues(texts: readonly string[]): MathValue[] | null {
  const values = texts.map((text) => parseCached(text));
  return values.every((value) => 'value' in value)
    ? values.map((value) => (value as { value: MathValue }).value)
    : null;
}

/** Boxes, then answer markers, then the unmarked fallback, in `text`. */
function extractFrom(
  text: string,
  options: ResolvedExtractOptions,
  violations: string[],
): Extraction {
  const boxes = findBoxes(text, MAX_BOXES);
  if (boxes.length > 0) {
    const boxed = fromBoxes(text, boxes, options, violations);
    if (options.multipleAnswers === 'last') return boxed;
    return finalStatementAfter(text, boxes.at(-1)!.end, boxed, options, violations) ?? boxed;
  }
  for (const [source, pattern] of MARKERS) {
    const at = lastMatchEnd(text, pattern);
    if (at >= 0) {
      const span = markedSpan(text, at, options);
      return finish(span, source, [span], options, violations);
    }
  }
  let reason = 'no answer found';
  if (options.fallback === 'last-number') {
    const unmarked = unmarkedAnswer(text, options.maxAnswerLength);
    if (unmarked.kind === 'hedged') {
      const alternatives = parsedValues(unmarked.candidates);
      return hedgedExtraction('last-number', unmarked.candidates, violations, alternatives);
    }
    if (unmarked.kind === 'answer') {
      const group = unmarked.group;
      if (group && (group.alternative || contentsDiffer(group.contents, options.maxAnswerLength))) {
        return hedgedExtraction(
          'last-span',
          group.contents,
          violations,
          parsedValues(group.contents),
        );
      }
      return finish(unmarked.text, unmarked.source, [unmarked.text], options, violations);
    }
    reason = unmarked.reason;
  }
  return {
    answer: null,
    source: 'none',
    hedged: false,
    candidates: [],
    violations: [...violations, 'no-answer'],
    parsed: null,
    alternatives: null,
    boxLists: [],
    reason,
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
 * 7. without a box or marker (`options.fallback`, default on): the whole response when it is one
 *    expression, else the later of the last complete math span (`$…$`, `\(…\)`, `\[…\]`) and the
 *    last number that stands alone (not a digit inside an expression, a word, a power, a fraction
 *    or an interval).
 *
 * Text after an end-of-turn token (`<|im_end|>`, `<|im_start|>`, `<|endoftext|>`, …) is not part of
 * the response; when the response has a `</think>`, what follows it is searched first. Several
 * boxes are decided by position (intermediate results, corrections, hedges). Markers 3–6 take the
 * last occurrence and read a `$…$` span or the rest of the sentence. The
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
