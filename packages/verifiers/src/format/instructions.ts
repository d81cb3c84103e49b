import {
  assertKnownKeys,
  InvalidArgumentError,
  type VerifyResult,
  validateInteger,
  validateOneOf,
} from '@rlvr/core';
import { checkR1Format, R1_FORMAT_OPTION_KEYS, type R1FormatOptions } from './r1-format.js';

/** Count bounds: `min` and/or `max` (inclusive). `{ min: 3, max: 3 }` means exactly 3. */
export type CountBounds = { min?: number; max?: number };

/**
 * One rule-based instruction (IFEval-style). The semantics of each are documented on
 * {@link checkInstructions} and in the package README.
 */
export type InstructionConstraint =
  | ({ type: 'r1-format' } & R1FormatOptions)
  | ({ type: 'word-count' } & CountBounds)
  | ({ type: 'sentence-count' } & CountBounds)
  | ({ type: 'paragraph-count'; separator?: 'blank-line' | 'divider' } & CountBounds)
  | { type: 'no-commas' }
  | { type: 'lowercase' }
  | { type: 'uppercase' }
  | { type: 'keywords'; include?: string[]; exclude?: string[]; caseSensitive?: boolean }
  | ({ type: 'keyword-frequency'; keyword: string; caseSensitive?: boolean } & CountBounds)
  | { type: 'json'; fence?: 'allow' | 'require' | 'forbid' }
  | { type: 'starts-with'; text: string }
  | { type: 'ends-with'; text: string }
  | ({ type: 'bullet-count' } & CountBounds)
  | { type: 'title' }
  | ({ type: 'placeholders' } & CountBounds)
  | { type: 'sections'; count: number; marker?: string }
  | { type: 'quotation' };

/** The verdict on one constraint. */
export type ConstraintResult = {
  type: InstructionConstraint['type'];
  passed: boolean;
  /** What was measured, e.g. `"42 words"`. */
  detail: string;
};

/** Result of {@link checkInstructions}: score = fraction of constraints met. */
export type InstructionResult = VerifyResult & {
  score: number;
  correct: boolean;
  results: ConstraintResult[];
  violations: string[];
};

const WORD = /[\p{L}\p{N}](?:[\p{L}\p{N}'’_-]|(?<=\p{N})[.,](?=\p{N}))*/gu;

/**
 * Words: maximal runs of letters/digits (with inner `'`, `’`, `_`, `-`, and `.`/`,` between digits,
 * so `3.14` and `1,000` are one word), Unicode-aware.
 */
export function countWords(text: string): number {
  let words = 0;
  for (const _ of text.matchAll(WORD)) words++;
  return words;
}

/**
 * Sentences: runs of `.`, `!` or `?` that follow a non-space character and are followed by
 * whitespace or the end (so `3.14` and `e.g.x` do not split), plus a final unterminated fragment
 * that contains a word.
 */
export function countSentences(text: string): number {
  let sentences = 0;
  let lastEnd = 0;
  for (const match of text.matchAll(/(?<=\S)[.!?]+(?=\s|$)/g)) {
    if (countWords(text.slice(lastEnd, match.index)) > 0) sentences++;
    lastEnd = match.index + match[0].length;
  }
  if (countWords(text.slice(lastEnd)) > 0) sentences++;
  return sentences;
}

/** Paragraphs: non-blank blocks separated by blank lines (or by `***` divider lines). */
export function countParagraphs(text: string, separator: 'blank-line' | 'divider'): number {
  const blocks =
    separator === 'divider'
      ? text.split(/^[ \t]*\*\*\*+[ \t]*\r?$/m)
      : text.split(/\n[ \t]*(?:\r?\n[ \t]*)+/);
  return blocks.filter((block) => block.trim() !== '').length;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Occurrences of `keyword` as a whole word/phrase (not inside a longer word). */
export function countKeyword(text: string, keyword: string, caseSensitive: boolean): number {
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])${escapeRegExp(keyword)}(?![\\p{L}\\p{N}_])`,
    caseSensitive ? 'gu' : 'giu',
  );
  let found = 0;
  for (const _ of text.matchAll(pattern)) found++;
  return found;
}

function within(value: number, bounds: CountBounds): boolean {
  return (
    (bounds.min === undefined || value >= bounds.min) &&
    (bounds.max === undefined || value <= bounds.max)
  );
}

function boundsText(bounds: CountBounds): string {
  if (bounds.min !== undefined && bounds.min === bounds.max) return `exactly ${bounds.min}`;
  const parts: string[] = [];
  if (bounds.min !== undefined) parts.push(`>= ${bounds.min}`);
  if (bounds.max !== undefined) parts.push(`<= ${bounds.max}`);
  return parts.join(' and ') || 'any number';
}

const FENCE = /^```[A-Za-z0-9_-]*[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;

function checkOne(text: string, constraint: InstructionConstraint): ConstraintResult {
  const result = (passed: boolean, detail: string): ConstraintResult => ({
    type: constraint.type,
    passed,
    detail,
  });
  switch (constraint.type) {
    case 'r1-format': {
      const { type: _type, ...options } = constraint;
      const format = checkR1Format(text, options);
      return result(format.correct, format.reason);
    }
    case 'word-count': {
      const words = countWords(text);
      return result(within(words, constraint), `${words} words (want ${boundsText(constraint)})`);
    }
    case 'sentence-count': {
      const sentences = countSentences(text);
      return result(
        within(sentences, constraint),
        `${sentences} sentences (want ${boundsText(constraint)})`,
      );
    }
    case 'paragraph-count': {
      const paragraphs = countParagraphs(text, constraint.separator ?? 'blank-line');
      return result(
        within(paragraphs, constraint),
        `${paragraphs} paragraphs (want ${boundsText(constraint)})`,
      );
    }
    case 'no-commas': {
      const commas = (text.match(/[,，、]/g) ?? []).length;
      return result(commas === 0, `${commas} commas`);
    }
    case 'lowercase': {
      const letters = /\p{L}/u.test(text);
      const ok = letters && text === text.toLowerCase();
      return result(ok, ok ? 'all lower case' : letters ? 'has upper-case letters' : 'no letters');
    }
    case 'uppercase': {
      const letters = /\p{L}/u.test(text);
      const ok = letters && text === text.toUpperCase();
      return result(ok, ok ? 'all upper case' : letters ? 'has lower-case letters' : 'no letters');
    }
    case 'keywords': {
      const caseSensitive = constraint.caseSensitive ?? false;
      const missing = (constraint.include ?? []).filter(
        (word) => countKeyword(text, word, caseSensitive) === 0,
      );
      const forbidden = (constraint.exclude ?? []).filter(
        (word) => countKeyword(text, word, caseSensitive) > 0,
      );
      const problems = [
        ...missing.map((word) => `missing "${word}"`),
        ...forbidden.map((word) => `forbidden "${word}" present`),
      ];
      return result(problems.length === 0, problems.join('; ') || 'keywords ok');
    }
    case 'keyword-frequency': {
      const found = countKeyword(text, constraint.keyword, constraint.caseSensitive ?? false);
      return result(
        within(found, constraint),
        `"${constraint.keyword}" ${found} times (want ${boundsText(constraint)})`,
      );
    }
    case 'json': {
      const trimmed = text.trim();
      const fence = FENCE.exec(trimmed);
      const mode = constraint.fence ?? 'allow';
      if (mode === 'require' && !fence) return result(false, 'not in a ``` fence');
      if (mode === 'forbid' && fence)
        return result(false, 'fenced, but a bare JSON value was required');
      const body = fence ? fence[1]! : trimmed;
      try {
        JSON.parse(body);
        return result(true, 'valid JSON');
      } catch (error) {
        return result(false, `invalid JSON (${(error as Error).message.slice(0, 80)})`);
      }
    }
    case 'starts-with': {
      const ok = text.trimStart().startsWith(constraint.text);
      return result(ok, ok ? 'starts with the phrase' : 'does not start with the phrase');
    }
    case 'ends-with': {
      const ok = text.trimEnd().endsWith(constraint.text);
      return result(ok, ok ? 'ends with the phrase' : 'does not end with the phrase');
    }
    case 'bullet-count': {
      const bullets = (text.match(/^[ \t]*[*+-][ \t]+\S/gm) ?? []).length;
      return result(
        within(bullets, constraint),
        `${bullets} bullets (want ${boundsText(constraint)})`,
      );
    }
    case 'title': {
      // Linear scan (no nested quantifiers): any <<…>> on one line with non-blank text.
      const ok = [...text.matchAll(/<<([^<>\n]+)>>/g)].some((match) => match[1]!.trim() !== '');
      return result(ok, ok ? 'has a <<title>>' : 'no <<title>>');
    }
    case 'placeholders': {
      const found = [...text.matchAll(/\[([^[\]\n]+)\]/g)].filter(
        (match) => match[1]!.trim() !== '',
      ).length;
      const bounds =
        constraint.min === undefined && constraint.max === undefined ? { min: 1 } : constraint;
      return result(within(found, bounds), `${found} placeholders (want ${boundsText(bounds)})`);
    }
    case 'sections': {
      const marker = constraint.marker ?? 'Section';
      const pattern = new RegExp(`^[ \\t#*]*${escapeRegExp(marker)}[ \\t]+(\\d+)`, 'gim');
      const numbers = [...text.matchAll(pattern)].map((match) => Number(match[1]));
      const ok =
        numbers.length === constraint.count &&
        numbers.every((number, index) => number === index + 1);
      return result(
        ok,
        `sections numbered [${numbers.slice(0, 20).join(', ')}] (want 1..${constraint.count})`,
      );
    }
    case 'quotation': {
      const trimmed = text.trim();
      const ok = trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"');
      return result(ok, ok ? 'wrapped in double quotes' : 'not wrapped in double quotes');
    }
  }
}

const TYPES = [
  'r1-format',
  'word-count',
  'sentence-count',
  'paragraph-count',
  'no-commas',
  'lowercase',
  'uppercase',
  'keywords',
  'keyword-frequency',
  'json',
  'starts-with',
  'ends-with',
  'bullet-count',
  'title',
  'placeholders',
  'sections',
  'quotation',
] as const;

function validateBounds(constraint: CountBounds, parameter: string): void {
  for (const key of ['min', 'max'] as const) {
    if (constraint[key] !== undefined) {
      validateInteger(constraint[key], {
        parameter: `${parameter}.${key}`,
        functionName: 'checkInstructions',
        min: 0,
      });
    }
  }
  if (
    constraint.min !== undefined &&
    constraint.max !== undefined &&
    constraint.min > constraint.max
  ) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.max`,
      functionName: 'checkInstructions',
      value: constraint.max,
      expected: `max >= min (${constraint.min})`,
    });
  }
}

function validateStringField(value: unknown, parameter: string): void {
  if (typeof value !== 'string' || value === '') {
    throw new InvalidArgumentError({
      parameter,
      functionName: 'checkInstructions',
      value,
      expected: 'a non-empty string',
    });
  }
}

const BOUNDS = ['min', 'max'] as const;
/** The keys each constraint type takes (besides `type`). */
const CONSTRAINT_KEYS: Record<InstructionConstraint['type'], readonly string[]> = {
  'r1-format': ['type', ...R1_FORMAT_OPTION_KEYS],
  'word-count': ['type', ...BOUNDS],
  'sentence-count': ['type', ...BOUNDS],
  'paragraph-count': ['type', 'separator', ...BOUNDS],
  'no-commas': ['type'],
  lowercase: ['type'],
  uppercase: ['type'],
  keywords: ['type', 'include', 'exclude', 'caseSensitive'],
  'keyword-frequency': ['type', 'keyword', 'caseSensitive', ...BOUNDS],
  json: ['type', 'fence'],
  'starts-with': ['type', 'text'],
  'ends-with': ['type', 'text'],
  'bullet-count': ['type', ...BOUNDS],
  title: ['type'],
  placeholders: ['type', ...BOUNDS],
  sections: ['type', 'count', 'marker'],
  quotation: ['type'],
};

/** Validates a list of constraints (throws a typed error naming the offending field). */
export function validateConstraints(constraints: unknown): InstructionConstraint[] {
  if (!Array.isArray(constraints) || constraints.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'constraints',
      functionName: 'checkInstructions',
      value: constraints,
      expected: 'a non-empty array of constraints',
    });
  }
  constraints.forEach((constraint: unknown, index) => {
    const parameter = `constraints[${index}]`;
    if (typeof constraint !== 'object' || constraint === null) {
      throw new InvalidArgumentError({
        parameter,
        functionName: 'checkInstructions',
        value: constraint,
        expected: 'a constraint object',
      });
    }
    const item = constraint as Record<string, unknown>;
    const type = validateOneOf(item.type, TYPES, {
      parameter: `${parameter}.type`,
      functionName: 'checkInstructions',
    });
    assertKnownKeys(item, {
      parameter,
      functionName: 'checkInstructions',
      known: CONSTRAINT_KEYS[type],
    });
    validateBounds(item as CountBounds, parameter);
    switch (item.type) {
      case 'keyword-frequency':
        validateStringField(item.keyword, `${parameter}.keyword`);
        break;
      case 'starts-with':
      case 'ends-with':
        validateStringField(item.text, `${parameter}.text`);
        break;
      case 'sections':
        validateInteger(item.count, {
          parameter: `${parameter}.count`,
          functionName: 'checkInstructions',
          min: 1,
        });
        if (item.marker !== undefined) validateStringField(item.marker, `${parameter}.marker`);
        break;
      case 'keywords':
        for (const key of ['include', 'exclude'] as const) {
          const list = item[key];
          if (list === undefined) continue;
          if (!Array.isArray(list)) {
            throw new InvalidArgumentError({
              parameter: `${parameter}.${key}`,
              functionName: 'checkInstructions',
              value: list,
              expected: 'an array of strings',
            });
          }
          for (const [wordIndex, word] of (list as unknown[]).entries()) {
            validateStringField(word, `${parameter}.${key}[${wordIndex}]`);
          }
        }
        break;
      case 'json':
        if (item.fence !== undefined) {
          validateOneOf(item.fence, ['allow', 'require', 'forbid'], {
            parameter: `${parameter}.fence`,
            functionName: 'checkInstructions',
          });
        }
        break;
      case 'paragraph-count':
        if (item.separator !== undefined) {
          validateOneOf(item.separator, ['blank-line', 'divider'], {
            parameter: `${parameter}.separator`,
            functionName: 'checkInstructions',
          });
        }
        break;
      default:
        break;
    }
  });
  return constraints as InstructionConstraint[];
}

/**
 * Checks a response against rule-based instructions (IFEval-style) and gives partial credit:
 * `score` = fraction of constraints met, `correct` = all met, `violations` = the types that failed.
 *
 * Semantics (all on the raw response unless noted):
 * - `word-count`: runs of Unicode letters/digits (inner `'` `’` `_` `-`, and `.`/`,` between
 *   digits, allowed) within `min`/`max`.
 * - `sentence-count`: terminators `.`/`!`/`?` (runs) after a non-space and before whitespace/end,
 *   plus a trailing unterminated fragment with a word.
 * - `paragraph-count`: non-blank blocks split by blank lines, or by `***` lines (`separator: 'divider'`).
 * - `no-commas`: no `,` `，` `、`.  `lowercase` / `uppercase`: has a letter and equals its lower/upper-cased self.
 * - `keywords`: every `include` word/phrase appears as a whole word, no `exclude` one does
 *   (case-insensitive unless `caseSensitive`). `keyword-frequency`: whole-word count within bounds.
 * - `json`: the trimmed response (or the body of one ``` fence around all of it; `fence`
 *   'allow' | 'require' | 'forbid') is valid JSON.
 * - `starts-with` / `ends-with`: the response, ignoring leading/trailing whitespace, starts/ends
 *   with `text` exactly (case-sensitive).
 * - `bullet-count`: lines starting with `*`, `-` or `+` then a space (markdown bullets).
 * - `title`: contains `<<…>>` with non-blank text on one line.
 * - `placeholders`: `[…]` with non-blank content on one line; default at least 1.
 * - `sections`: lines starting with `marker N` (default `Section`, case-insensitive, optional `#`/`*`)
 *   numbered exactly 1..count in order.
 * - `quotation`: the trimmed response starts and ends with `"`.
 * - `r1-format`: {@link checkR1Format}.
 *
 * @example
 * ```ts
 * const result = checkInstructions('<<Cats>>\n* soft\n* warm', [
 *   { type: 'title' }, { type: 'bullet-count', min: 2, max: 2 }, { type: 'no-commas' },
 * ]);
 * result.score; // 1
 * ```
 * @throws {InvalidArgumentError} for a non-string response or a malformed constraint.
 */
export function checkInstructions(
  response: string,
  constraints: InstructionConstraint[],
): InstructionResult {
  const start = performance.now();
  if (typeof response !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'response',
      functionName: 'checkInstructions',
      value: response,
      expected: 'a string',
    });
  }
  const list = validateConstraints(constraints);
  const results = list.map((constraint) => checkOne(response, constraint));
  const passed = results.filter((item) => item.passed).length;
  const violations = results.filter((item) => !item.passed).map((item) => item.type);
  return {
    score: passed / results.length,
    correct: passed === results.length,
    extracted: null,
    reason: `${passed}/${results.length} constraints met${violations.length ? ` (failed: ${violations.join(', ')})` : ''}`,
    results,
    violations,
    timings: { totalMs: performance.now() - start },
  };
}
