import { InvalidArgumentError, validateInteger, validateOneOf } from '@rlvr/core';
import type { LanguageDetector } from './language.js';

/** IFEval's comparison relations: `'less than'` is `<`, `'at least'` is `>=`. */
export const RELATIONS = ['less than', 'at least'] as const;
export type Relation = (typeof RELATIONS)[number];

/**
 * How to decide where IFEval's reference code and a sound reward disagree:
 * - `'hardened'` (default): as IFEval, except `""` is not a quotation, markdown links, images and
 *   task checkboxes are not placeholders, and a response whose language cannot be determined
 *   does not meet a language instruction.
 * - `'official'`: exactly IFEval's rules (to reproduce published IFEval numbers).
 */
export type IfevalSemantics = 'hardened' | 'official';

/** What a check sees besides the response and its kwargs. */
export type CheckContext = {
  semantics: IfevalSemantics;
  detector: LanguageDetector | undefined;
};

export const FUNCTION_NAME = 'checkIfeval';

export function compare(value: number, relation: Relation, threshold: number): boolean {
  return relation === 'less than' ? value < threshold : value >= threshold;
}

export function readInteger(value: unknown, parameter: string, min = 0): number {
  return validateInteger(value, { parameter, functionName: FUNCTION_NAME, min });
}

export function readRelation(value: unknown, parameter: string): Relation {
  return validateOneOf(value, RELATIONS, { parameter, functionName: FUNCTION_NAME });
}

/** A non-blank string, stripped as IFEval strips it. */
export function readString(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidArgumentError({
      parameter,
      functionName: FUNCTION_NAME,
      value,
      expected: 'a non-blank string',
    });
  }
  return value.trim();
}

export function readStringList(value: unknown, parameter: string): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError({
      parameter,
      functionName: FUNCTION_NAME,
      value,
      expected: 'a non-empty array of strings',
    });
  }
  return value.map((item, index) => readString(item, `${parameter}[${index}]`));
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Non-overlapping matches of a global pattern (Python's `re.findall` count). */
export function countMatches(text: string, pattern: RegExp): number {
  let count = 0;
  for (const _ of text.matchAll(pattern)) count++;
  return count;
}
