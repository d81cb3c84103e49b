import { ErrorCode } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { allocateVotes, planAllocationRound } from './allocation/allocate.js';
import { accuracyCurve, majAtKFromAnswers, meanAccuracyCurve } from './estimators/curves.js';
import { adaptiveVote, vote } from './sampling/sampled-vote.js';
import { dirichletStopProbability } from './sampling/stopping.js';
import { majorityVote } from './vote/majority-vote.js';
import { bestOfN, scoredVote } from './vote/scored.js';

const sampler = () =>
  new MockSampler({
    script: (request) =>
      request.prompts.map(() => Array.from({ length: request.n }, () => mockCompletion('A: 1'))),
  });
const extract = (text: string) => text.slice(3);
const sampling = { maxNewTokens: 4, seed: 1 };

async function rejection(run: () => unknown): Promise<{ code?: string; message: string }> {
  try {
    await run();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe('voting options', () => {
  it('should reject an unknown key of every options object, naming the closest valid one', async () => {
    const cases: [() => unknown, RegExp][] = [
      [() => majorityVote(['1'], { weigthing: 'uniform' } as never), /did you mean 'weighting'\?/],
      [() => scoredVote(['1'], { scorer: () => 1, extrct: extract } as never), /'extract'/],
      [() => bestOfN(['1'], { scorer: () => 1, score: () => 1 } as never), /'scorer'/],
      [
        () =>
          vote({ sampler: sampler(), prompt: 'p', n: 2, sampling, wieghting: 'uniform' } as never),
        /did you mean 'weighting'\?/,
      ],
      [
        () =>
          vote({
            sampler: sampler(),
            prompt: 'p',
            n: 2,
            sampling: { maxNewTokens: 4, temprature: 1 },
          } as never),
        /'options\.sampling\.temprature'.*did you mean 'temperature'\?/,
      ],
      [
        () =>
          adaptiveVote({
            sampler: sampler(),
            prompt: 'p',
            maxSamples: 4,
            sampling,
            strategy: { type: 'esc', window_size: 2 },
          } as never),
        /did you mean 'windowSize'\?/,
      ],
      [
        () =>
          adaptiveVote({
            sampler: sampler(),
            prompt: 'p',
            maxSamples: 4,
            sampling,
            strategy: { type: 'adaptive-consistency', treshold: 0.9 },
          } as never),
        /did you mean 'threshold'\?/,
      ],
      [
        () =>
          adaptiveVote({
            sampler: sampler(),
            prompt: 'p',
            max_samples: 4,
            sampling,
            strategy: { type: 'adaptive-consistency' },
          } as never),
        /did you mean 'maxSamples'\?/,
      ],
      [
        () =>
          allocateVotes({
            sampler: sampler(),
            prompts: ['p'],
            totalSamples: 4,
            sampling,
            round_size: 2,
          } as never),
        /did you mean 'roundSize'\?/,
      ],
      [() => accuracyCurve(['1'], '1', { k: [1] } as never), /'ks'/],
      [() => meanAccuracyCurve([{ samples: ['1'], gold: '1' }], { kss: [1] } as never), /'ks'/],
      [() => majAtKFromAnswers(['1'], '1', 1, { equal: () => true } as never), /'equals'/],
      [() => dirichletStopProbability([1, 2], { sample: 10 } as never), /'samples'/],
      [
        () =>
          planAllocationRound([], 4, {
            roundSize: 1,
            threshold: 0.9,
            maxPerPrompt: 2,
            max: 3,
          } as never),
        /'policy\.max'/,
      ],
    ];
    for (const [run, message] of cases) {
      const error = await rejection(run);
      expect(error.code, error.message).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(error.message).toMatch(message);
    }
  });

  it('should reject options that have no effect: batchSize under ESC, weights without provided', async () => {
    const esc = sampler();
    const error = await rejection(() =>
      adaptiveVote({
        sampler: esc,
        prompt: 'p',
        maxSamples: 8,
        batchSize: 4,
        sampling,
        strategy: { type: 'esc', windowSize: 2 },
        extract,
      }),
    );
    expect(error.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(error.message).toMatch(/options\.batchSize.*'esc'/);
    expect(esc.sampleCalls).toHaveLength(0);
    const weights = await rejection(() => majorityVote(['1', '2'], { weights: [1, 2] }));
    expect(weights.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(
      majorityVote(['\\boxed{1}', '\\boxed{2}'], { weighting: 'provided', weights: [1, 2] }).answer,
    ).toBe('2');
  });
});
