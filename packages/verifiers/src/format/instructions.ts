import { InvalidArgumentError, type VerifyResult } from '@rlvr/core';
import { type InstructionConstraint, validateConstraints } from './constraints.js';
import { checkR1Format } from './r1-format.js';
import {
  boundsText,
  countKeyword,
  countPlaceholders,
  countSentences,
  countWords,
  escapeRegExp,
  paragraphBlocks,
  twoResponseParts,
  within,
} from './text-measures.js';

export type { CountBounds, InstructionConstraint } from './constraints.js';
export { validateConstraints } from './constraints.js';
export { countSentences, countWords } from './text-measures.js';

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
      const { paragraphs, emptyInside } = paragraphBlocks(
        text,
        constraint.separator ?? 'blank-line',
      );
      if (emptyInside > 0)
        return result(false, `${emptyInside} empty paragraph(s) between dividers`);
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
      const found = countPlaceholders(text);
      const bounds =
        constraint.min === undefined && constraint.max === undefined ? { min: 1 } : constraint;
      return result(within(found, bounds), `${found} placeholders (want ${boundsText(bounds)})`);
    }
    case 'sections': {
      const marker = constraint.marker ?? 'Section';
      const pattern = new RegExp(`^[ \\t#*]*${escapeRegExp(marker)}[ \\t]+(\\d+)`, 'gm');
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
      const wrapped = trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"');
      const ok = wrapped && trimmed.slice(1, -1).trim() !== '';
      return result(
        ok,
        ok
          ? 'wrapped in double quotes'
          : wrapped
            ? 'nothing inside the quotes'
            : 'not wrapped in double quotes',
      );
    }
    case 'repeat-prompt': {
      const ok = text.trim().toLowerCase().startsWith(constraint.prompt.trim().toLowerCase());
      return result(ok, ok ? 'starts by repeating the prompt' : 'does not start with the prompt');
    }
    case 'two-responses': {
      const parts = twoResponseParts(text);
      if (parts === null) return result(false, 'an empty response between ****** separators');
      const ok = parts.length === 2 && parts[0]!.trim() !== parts[1]!.trim();
      return result(
        ok,
        parts.length !== 2
          ? `${parts.length} responses separated by ****** (want 2)`
          : ok
            ? 'two different responses'
            : 'the two responses are the same',
      );
    }
  }
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
 * - `paragraph-count`: non-blank blocks split by blank lines, or by `***` lines (`separator: 'divider'`;
 *   a blank block between two dividers fails the check).
 * - `no-commas`: no `,` `，` `、`.  `lowercase` / `uppercase`: has a letter and equals its lower/upper-cased self.
 * - `keywords`: every `include` word/phrase appears as a whole word, no `exclude` one does
 *   (case-insensitive unless `caseSensitive`). `keyword-frequency`: whole-word count within bounds.
 * - `json`: the trimmed response (or the body of one ``` fence around all of it; `fence`
 *   'allow' | 'require' | 'forbid') is valid JSON.
 * - `starts-with` / `ends-with`: the response, ignoring leading/trailing whitespace, starts/ends
 *   with `text` exactly (case-sensitive).
 * - `bullet-count`: lines starting with `*`, `-` or `+` then a space (markdown bullets).
 * - `title`: contains `<<…>>` with non-blank text on one line.
 * - `placeholders`: `[…]` with non-blank content on one line, not a markdown link `[t](u)`, image
 *   or task checkbox (`- [x]`); default at least 1.
 * - `sections`: lines starting with `marker N` (default `Section`, case-sensitive as IFEval,
 *   optional `#`/`*`) numbered exactly 1..count in order.
 * - `quotation`: the trimmed response starts and ends with `"` and has non-blank text inside.
 * - `repeat-prompt`: the trimmed response starts with the trimmed `prompt` (case-insensitive).
 * - `two-responses`: exactly two non-blank, different parts separated by `******` (a blank part
 *   between two separators fails).
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
