import { AbortedError, type Completion, type SampleRequest } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { allocateVotes } from '../allocation/allocate.js';
import { adaptiveVote, vote } from './sampled-vote.js';

const extract = (text: string) => /A: (\S+)/.exec(text)?.[1] ?? null;
const equals = (a: string, b: string) => a === b;
const sampling = { maxNewTokens: 8, seed: 0 };

/** Answers '1'; the completions of call `abortedCall` end with finishReason 'abort'. */
function sampler(abortedCall: number) {
  return new MockSampler({
    script: (request: SampleRequest, call) =>
      request.prompts.map(() =>
        Array.from(
          { length: request.n },
          (_, index): Completion =>
            mockCompletion('A: 1', {
              finishReason: call === abortedCall && index === 0 ? 'abort' : 'stop',
            }),
        ),
      ),
  });
}

/** A sampler that ignores the signal: it aborts it during the call and still resolves. */
function ignoringSampler(controller: AbortController, abortAtCall: number) {
  return new MockSampler({
    script: (request: SampleRequest, call) => {
      if (call === abortAtCall) controller.abort('user');
      return request.prompts.map(() =>
        Array.from({ length: request.n }, () => mockCompletion('A: 1')),
      );
    },
  });
}

describe('voting abort contract', () => {
  it('should reject rather than vote over a group with an aborted completion', async () => {
    await expect(
      vote({ sampler: sampler(0), prompt: 'p', n: 4, sampling, extract, equals }),
    ).rejects.toSatisfy(AbortedError.isInstance);
    await expect(
      adaptiveVote({
        sampler: sampler(1),
        prompt: 'p',
        maxSamples: 8,
        strategy: { type: 'esc', windowSize: 2 },
        sampling,
        extract: (text) => (text === 'A: 1' ? null : '1'), // never unanimous: keeps sampling
        equals,
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);
    await expect(
      adaptiveVote({
        sampler: sampler(0),
        prompt: 'p',
        maxSamples: 8,
        strategy: { type: 'adaptive-consistency' },
        batchSize: 2,
        sampling,
        extract,
        equals,
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);
    await expect(
      allocateVotes({
        sampler: sampler(0),
        prompts: ['p', 'q'],
        totalSamples: 8,
        sampling,
        extract,
        equals,
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);
  });

  it('should reject when the signal aborts, even if the sampler resolves anyway', async () => {
    for (const run of [
      (controller: AbortController) =>
        vote({
          sampler: ignoringSampler(controller, 0),
          prompt: 'p',
          n: 2,
          sampling,
          extract,
          equals,
          signal: controller.signal,
        }),
      (controller: AbortController) =>
        adaptiveVote({
          sampler: ignoringSampler(controller, 0),
          prompt: 'p',
          maxSamples: 8,
          strategy: { type: 'adaptive-consistency', threshold: 0.99 },
          sampling,
          extract,
          equals,
          signal: controller.signal,
        }),
      (controller: AbortController) =>
        adaptiveVote({
          sampler: ignoringSampler(controller, 0),
          prompt: 'p',
          maxSamples: 8,
          strategy: { type: 'esc', windowSize: 4 },
          sampling,
          extract,
          equals,
          signal: controller.signal,
        }),
      (controller: AbortController) =>
        allocateVotes({
          sampler: ignoringSampler(controller, 0),
          prompts: ['p'],
          totalSamples: 8,
          sampling,
          extract,
          equals,
          signal: controller.signal,
        }),
    ]) {
      await expect(run(new AbortController())).rejects.toSatisfy(AbortedError.isInstance);
    }
  });
});
