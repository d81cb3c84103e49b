import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  DISTILL_STUDENT_OPTION_KEYS,
  type DistillStudentOptions,
  FILTER_TRACES_OPTION_KEYS,
  type FilterTracesOptions,
  filterTraces,
  GENERATE_TRACES_OPTION_KEYS,
  type GenerateTracesOptions,
} from './index.js';
import { validateGenerateOptions } from './traces/generate-traces-options.js';
import { validateDistillOptions } from './train/distill-options.js';

/** The keys a validator lists when it rejects a key with no close match. */
function keysAccepted(validate: (options: never) => unknown): string[] {
  try {
    validate({ zzzzzzzzzzzz: 1 } as never);
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error) || error.code !== 'UNKNOWN_OPTION') throw error;
    const listed = /one of (.*)\)/.exec(error.message)?.[1] ?? '';
    return [...listed.matchAll(/'([^']+)'/g)].map((match) => match[1]!);
  }
  throw new Error('an unknown key was accepted');
}

describe('option key lists', () => {
  it('should be exactly the keys generateTraces, distillStudent and filterTraces accept', () => {
    expect(keysAccepted(validateGenerateOptions).sort()).toEqual(
      [...GENERATE_TRACES_OPTION_KEYS].sort(),
    );
    expect(keysAccepted(validateDistillOptions).sort()).toEqual(
      [...DISTILL_STUDENT_OPTION_KEYS].sort(),
    );
    expect(keysAccepted((options) => filterTraces([], options)).sort()).toEqual(
      [...FILTER_TRACES_OPTION_KEYS].sort(),
    );
  });

  it('should name every key of the options types', () => {
    expectTypeOf<(typeof GENERATE_TRACES_OPTION_KEYS)[number]>().toEqualTypeOf<
      keyof GenerateTracesOptions
    >();
    expectTypeOf<(typeof DISTILL_STUDENT_OPTION_KEYS)[number]>().toEqualTypeOf<
      keyof DistillStudentOptions
    >();
    expectTypeOf<(typeof FILTER_TRACES_OPTION_KEYS)[number]>().toEqualTypeOf<
      keyof FilterTracesOptions
    >();
  });
});
