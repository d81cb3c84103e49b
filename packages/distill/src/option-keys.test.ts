import { fingerprint, InvalidArgumentError, SAMPLE_REQUEST_DEFAULTS } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  DISTILL_LOSS_DEFAULTS,
  DISTILL_STUDENT_DEFAULTS,
  DISTILL_STUDENT_OPTION_KEYS,
  type DistillStudentOptions,
  distillationLoss,
  distillationLossAndGradient,
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
import { distillSettings, validateDistillOptions } from './train/distill-options.js';

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

  it("should take the sampling temperatures from core's SampleRequest default", () => {
    expect(GENERATE_TRACES_DEFAULTS.sampling.temperature).toBe(SAMPLE_REQUEST_DEFAULTS.temperature);
    expect(DISTILL_STUDENT_DEFAULTS.onPolicy.temperature).toBe(SAMPLE_REQUEST_DEFAULTS.temperature);
  });

  it('should be what distillStudent applies and records for an omitted loss or on-policy setting', () => {
    // validateDistillOptions checks only the trainer's shape and never calls it
    const trainer = { sftStep: () => undefined, logitsStep: () => undefined } as never;
    const trace: TraceRecord = {
      promptId: 'p',
      prompt: 'q',
      sampleIndex: 0,
      completion: 'a',
      tokenIds: [1],
      finishReason: 'stop',
      reward: 1,
      accepted: true,
    };
    const base = { trainer, traces: [trace], epochs: 1, batchSize: 1 };
    const sampler = new MockSampler({ script: [] });
    for (const divergence of ['jsd', 'forward-kl'] as const) {
      const omitted = validateDistillOptions({
        ...base,
        loss: { type: 'logits', divergence, teacher: async () => [] },
        onPolicy: { fraction: 0.5, sampler, maxNewTokens: 4 },
      });
      const explicit = validateDistillOptions({
        ...base,
        loss: {
          type: 'logits',
          divergence,
          teacher: async () => [],
          temperature: DISTILL_LOSS_DEFAULTS.temperature,
          sftWeight: DISTILL_LOSS_DEFAULTS.sftWeight,
          ...(divergence === 'jsd' ? { beta: DISTILL_LOSS_DEFAULTS.beta } : {}),
        },
        onPolicy: {
          fraction: 0.5,
          sampler,
          maxNewTokens: 4,
          temperature: DISTILL_STUDENT_DEFAULTS.onPolicy.temperature,
        },
      });
      const settings = distillSettings(omitted);
      expect(settings.loss).toMatchObject({
        beta: divergence === 'jsd' ? DISTILL_LOSS_DEFAULTS.beta : null,
        temperature: DISTILL_LOSS_DEFAULTS.temperature,
        sftWeight: DISTILL_LOSS_DEFAULTS.sftWeight,
      });
      expect(settings.onPolicy).toMatchObject({
        temperature: DISTILL_STUDENT_DEFAULTS.onPolicy.temperature,
      });
      // omitted and given are the same run (a checkpoint of one resumes the other)
      expect(fingerprint(settings)).toBe(fingerprint(distillSettings(explicit)));
    }
  });

  it('should be what the distillation losses apply when beta and temperature are omitted', () => {
    const teacher = [2, 0.5, -1, 0];
    const studentLogits = [0.3, 1.2, -0.4, 0.1];
    const given = {
      beta: DISTILL_LOSS_DEFAULTS.beta,
      temperature: DISTILL_LOSS_DEFAULTS.temperature,
    };
    const other = { beta: 0.25, temperature: 2 };
    const full = (extra: object) =>
      distillationLoss({
        teacher: [teacher],
        studentLogits: [studentLogits],
        divergence: 'jsd',
        ...extra,
      });
    const withGradient = (extra: object) =>
      distillationLossAndGradient({ teacher, studentLogits, divergence: 'jsd', ...extra });
    expect(full({})).toEqual(full(given));
    expect(full({})).not.toEqual(full(other));
    expect(withGradient({})).toEqual(withGradient(given));
    expect(withGradient({}).loss).not.toBe(withGradient(other).loss);
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
