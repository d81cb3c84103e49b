import { fingerprint, InvalidArgumentError } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  DISTILL_STUDENT_OPTION_KEYS,
  type DistillStudentOptions,
  FILTER_TRACES_DEFAULTS,
  FILTER_TRACES_OPTION_KEYS,
  type FilterTracesOptions,
  filterTraces,
  GENERATE_TRACES_DEFAULTS,
  GENERATE_TRACES_OPTION_KEYS,
  type GenerateTracesOptions,
  type TraceRecord,
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

describe('defaults', () => {
  it('should be what generateTraces applies when a setting is not given', () => {
    const validated = validateGenerateOptions({
      sampler: new MockSampler({ script: [] }),
      prompts: [{ id: 'p', prompt: '1+1=' }],
      k: 2,
      sampling: { maxNewTokens: 4 },
      reward: () => 1,
      outPath: 'traces.jsonl',
    });
    expect(validated).toMatchObject({
      acceptThreshold: GENERATE_TRACES_DEFAULTS.acceptThreshold,
      batchSize: GENERATE_TRACES_DEFAULTS.batchSize,
      resume: GENERATE_TRACES_DEFAULTS.resume,
      overwrite: GENERATE_TRACES_DEFAULTS.overwrite,
      keepLogprobs: GENERATE_TRACES_DEFAULTS.keepLogprobs,
    });
    expect(validated.settings.sampling).toMatchObject(GENERATE_TRACES_DEFAULTS.sampling);
    expect(validated.sampling).toMatchObject(GENERATE_TRACES_DEFAULTS.sampling);
    // Leaving a sampling default out and giving it are the same run (same fingerprint).
    const explicit = validateGenerateOptions({
      sampler: new MockSampler({ script: [] }),
      prompts: [{ id: 'p', prompt: '1+1=' }],
      k: 2,
      sampling: { maxNewTokens: 4, ...GENERATE_TRACES_DEFAULTS.sampling },
      reward: () => 1,
      outPath: 'traces.jsonl',
    });
    expect(fingerprint(explicit.settings)).toBe(fingerprint(validated.settings));
  });

  it('should be what filterTraces applies when a setting is not given', () => {
    const trace = (sampleIndex: number, completion: string, finishReason: 'stop' | 'length') =>
      ({
        promptId: 'p',
        prompt: 'q',
        sampleIndex,
        completion,
        tokenIds: completion.split(' ').map((_, index) => index),
        finishReason,
        reward: 1,
        accepted: true,
      }) satisfies TraceRecord;
    const traces = [
      trace(0, 'the answer is four', 'stop'),
      trace(1, 'the answer is four', 'stop'),
      trace(2, 'four', 'length'),
      trace(3, 'so it is four then', 'stop'),
    ];
    const { seed: _, ...explicit } = FILTER_TRACES_DEFAULTS; // seed only with prefer: 'random'
    expect(filterTraces(traces)).toEqual(filterTraces(traces, explicit));
    // and they are not the other choices
    expect(filterTraces(traces).kept).not.toEqual(
      filterTraces(traces, { dropTruncated: false, dedupeThreshold: false, prefer: 'first' }).kept,
    );
  });
});
