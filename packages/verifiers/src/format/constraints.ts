import { assertKnownKeys, InvalidArgumentError, validateInteger, validateOneOf } from '@rlvr/core';
import { R1_FORMAT_OPTION_KEYS, type R1FormatOptions } from './r1-format.js';
import type { CountBounds } from './text-measures.js';

export type { CountBounds } from './text-measures.js';

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
  | { type: 'quotation' }
  | { type: 'repeat-prompt'; prompt: string }
  | { type: 'two-responses' };

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
  'repeat-prompt',
  'two-responses',
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
  'repeat-prompt': ['type', 'prompt'],
  'two-responses': ['type'],
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
      case 'repeat-prompt':
        validateStringField(item.prompt, `${parameter}.prompt`);
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
