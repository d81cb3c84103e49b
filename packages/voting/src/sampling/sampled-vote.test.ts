import type { Completion, SampleRequest } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { adaptiveVote, vote } from './sampled-vote.js';

const extract = (text: string) => {
  const match = /A:\s*(\S+)/.exec(text);
  return match ? match[1]! : null;
};
const equals = (a: string, b: string) => a === b;

/** A sampler that replays a fixed answer sequence for one prompt, one completion per requested sample. */
function scriptedSampler(answers: string[], tokensPerSample?: number) {
  let position = 0;
  return new MockSampler({
    script: (request: SampleRequest) =>
      request.prompts.map(() =>
        Array.from({ length: request.n }, (): Completion => {
          const answer = answers[position++ % answers.length]!;
          const text = `A: ${answer}`;
          const length = Math.min(tokensPerSample ?? text.length, request.maxNewTokens);
          return {
            ...mockCompletion(text),
            tokenIds: new Array(length).fill(1),
            logprobs: new Array(length).fill(-0.1),
          };
        }),
      ),
  });
}

describe('vote', () => {
  it('should draw n samples in one call and vote over them', async () => {
    const sampler = scriptedSampler(['4', '5', '4', '4']);
    const result = await vote({
      sampler,
      prompt: 'p',
      n: 4,
      sampling: { maxNewTokens: 8, seed: 3 },
      extract,
      equals,
    });
    expect(result.answer).toBe('4');
    expect(result.share).toBe(0.75);
    expect(result.samplesUsed).toBe(4);
    expect(result.stoppedBecause).toBe('fixed');
    expect(sampler.sampleCalls).toEqual([{ maxNewTokens: 8, seed: 3, prompts: ['p'], n: 4 }]);
  });

  it('should fail loudly when the sampler returns the wrong number of completions', async () => {
    const sampler = new MockSampler({ script: () => [[mockCompletion('A: 1')]] });
    await expect(
      vote({ sampler, prompt: 'p', n: 2, sampling: { maxNewTokens: 4 }, extract, equals }),
    ).rejects.toThrow(/returned 1 completions/);
  });
});

describe('adaptiveVote (ESC)', () => {
  it('should stop after the first unanimous window', async () => {
    const sampler = scriptedSampler(['1', '2', '1', '2', '2', '2', '9', '9', '9']);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'esc', windowSize: 3 },
      maxSamples: 30,
      sampling: { maxNewTokens: 8, seed: 10 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(6);
    expect(result.stoppedBecause).toBe('unanimous-window');
    expect(result.answer).toBe('2');
    expect(sampler.sampleCalls.map((call) => [call.n, call.seed])).toEqual([
      [3, 10],
      [3, 11],
    ]);
  });

  it('should not count a window with a missing answer as unanimous', async () => {
    const sampler = new MockSampler({
      script: (request) => [
        Array.from({ length: request.n }, (_, i) => mockCompletion(i === 0 ? 'no answer' : 'A: 1')),
      ],
    });
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'esc', windowSize: 2 },
      maxSamples: 6,
      sampling: { maxNewTokens: 8 },
      extract,
      equals,
    });
    expect(result.stoppedBecause).toBe('sample-budget');
    expect(result.samplesUsed).toBe(6);
    expect(result.discarded).toBe(3);
  });
});

describe('adaptiveVote (Adaptive-Consistency)', () => {
  it('should stop at the 4th of four agreeing samples with the Beta criterion at 0.95', async () => {
    // P(leader ahead) after 1..4 identical votes: 0.75, 0.875, 0.9375, 0.96875.
    const sampler = scriptedSampler(['7']);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'adaptive-consistency', threshold: 0.95 },
      maxSamples: 40,
      sampling: { maxNewTokens: 8 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(4);
    expect(result.stoppedBecause).toBe('confident');
  });

  it('should stop at the 7th sample with one dissenting vote', async () => {
    // With one dissent the stop probability is 1 − (n+1)/2^n, n = v1 + 2: v1 = 6 is the first ≥ 0.95.
    const sampler = scriptedSampler(['1', '2', '1', '1', '1', '1', '1', '1', '1']);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'adaptive-consistency', criterion: 'beta', threshold: 0.95 },
      maxSamples: 40,
      sampling: { maxNewTokens: 8 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(7);
    expect(result.answer).toBe('1');
    expect(result.clusters.map((c) => c.count)).toEqual([6, 1]);
  });

  it('should stop with the Dirichlet criterion too', async () => {
    const sampler = scriptedSampler(['1']);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: {
        type: 'adaptive-consistency',
        criterion: 'dirichlet',
        threshold: 0.9,
        minSamples: 3,
      },
      maxSamples: 10,
      sampling: { maxNewTokens: 8 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(3); // a single answer is always the leader, but minSamples is 3
    expect(result.stoppedBecause).toBe('confident');
  });

  it('should never exceed the token budget, shrinking maxNewTokens for the last calls', async () => {
    const sampler = scriptedSampler(['1', '2', '3'], 100);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'adaptive-consistency' },
      maxSamples: 50,
      maxTokens: 10,
      sampling: { maxNewTokens: 4 },
      extract,
      equals,
    });
    expect(result.tokensUsed).toBe(10);
    expect(result.stoppedBecause).toBe('token-budget');
    expect(sampler.sampleCalls.map((call) => call.maxNewTokens)).toEqual([4, 4, 2]);
  });

  it('should respect the sample budget', async () => {
    const sampler = scriptedSampler(['1', '2']);
    const result = await adaptiveVote({
      sampler,
      prompt: 'p',
      strategy: { type: 'adaptive-consistency' },
      maxSamples: 5,
      batchSize: 2,
      sampling: { maxNewTokens: 4 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(5);
    expect(result.stoppedBecause).toBe('sample-budget');
    expect(sampler.sampleCalls.map((call) => call.n)).toEqual([2, 2, 1]);
  });

  it('should reject bad options naming the parameter', async () => {
    const sampler = scriptedSampler(['1']);
    const base = {
      sampler,
      prompt: 'p',
      maxSamples: 4,
      sampling: { maxNewTokens: 4 },
      extract,
      equals,
    };
    await expect(
      adaptiveVote({ ...base, strategy: { type: 'esc', windowSize: 0 } }),
    ).rejects.toThrow(/options.strategy.windowSize/);
    await expect(
      adaptiveVote({ ...base, strategy: { type: 'adaptive-consistency', threshold: 1 } }),
    ).rejects.toThrow(/options.strategy.threshold/);
    await expect(adaptiveVote({ ...base, strategy: { type: 'magic' } as never })).rejects.toThrow(
      /options.strategy.type/,
    );
    await expect(
      adaptiveVote({ ...base, maxSamples: 0, strategy: { type: 'esc', windowSize: 2 } }),
    ).rejects.toThrow(/options.maxSamples/);
    await expect(
      adaptiveVote({ ...base, sampler: {} as never, strategy: { type: 'esc', windowSize: 2 } }),
    ).rejects.toThrow(/options.sampler/);
    await expect(
      adaptiveVote({
        ...base,
        sampling: { maxNewTokens: 0 },
        strategy: { type: 'esc', windowSize: 2 },
      }),
    ).rejects.toThrow(/options.sampling.maxNewTokens/);
  });
});
