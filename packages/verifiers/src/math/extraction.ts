/** The extraction result shared by the extraction steps (boxes, markers, fallback). Internal. */
import { parseCached } from './equivalent.js';
import type { ExtractOptions } from './extract.js';
import { answerSpan, statementValue } from './markers.js';
import type { MathValue } from './structure.js';

/** Where an answer was found, in priority order (see {@link extractAnswer}). */
export type ExtractSource =
  | 'boxed'
  | 'answer-tag'
  | 'gsm8k'
  | 'minerva'
  | 'final-answer'
  | 'answer-is'
  | 'last-span'
  | 'last-number'
  | 'none';

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
  /**
   * Readings of several boxes as one list, for a gold that lists several values: the final group
   * of boxes, and every box since the last correction.
   */
  boxLists: MathValue[][];
  /** Why nothing was found, when nothing was. */
  reason?: string;
};

export type ResolvedExtractOptions = Required<Omit<ExtractOptions, 'question'>> & {
  question?: string;
};

export function finish(
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
      boxLists: [],
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
      boxLists: [],
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
      boxLists: [],
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
    boxLists: [],
  };
}

export function hedgedExtraction(
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
    boxLists: [],
  };
}

/** The value a marker introduces: its span, or the value named by an answer statement. */
export function markedSpan(text: string, at: number, options: ResolvedExtractOptions): string {
  return statementValue(answerSpan(text, at, options.maxAnswerLength));
}
