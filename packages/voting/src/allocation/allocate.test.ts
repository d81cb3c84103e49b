import type { SampleRequest } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { allocateVotes, planAllocationRound } from './allocate.js';

const extract = (text: string) => /A:\s*(\S+)/.exec(text)?.[1] ?? null;
const equals = (a: string, b: string) => a === b;

describe('planAllocationRound', () => {
  const policy = { roundSize: 4, threshold: 0.95, maxPerPrompt: 12 };
  it('should give samples to split votes, least confident first, within the budget and caps', () => {
    const plan = planAllocationRound(
      [
        { samples: 4, leaderVotes: 4, runnerUpVotes: 0 }, // decided (0.969)
        { samples: 4, leaderVotes: 3, runnerUpVotes: 1 }, // 0.8125
        { samples: 4, leaderVotes: 2, runnerUpVotes: 2 }, // 0.5
        { samples: 12, leaderVotes: 6, runnerUpVotes: 6 }, // capped
      ],
      6,
      policy,
    );
    expect(plan).toEqual([
      [2, 4],
      [1, 2],
    ]);
    expect(
      planAllocationRound([{ samples: 4, leaderVotes: 4, runnerUpVotes: 0 }], 100, policy),
    ).toEqual([]);
  });
});

describe('allocateVotes', () => {
  it('should spend more samples on prompts whose vote is split', async () => {
    const counters = new Map<string, number>();
    const sampler = new MockSampler({
      script: (request: SampleRequest) =>
        request.prompts.map((prompt) =>
          Array.from({ length: request.n }, () => {
            const key = String(prompt);
            const seen = counters.get(key) ?? 0;
            counters.set(key, seen + 1);
            const answer = key === 'easy' ? '1' : String(seen % 3);
            return mockCompletion(`A: ${answer}`);
          }),
        ),
    });
    const result = await allocateVotes({
      sampler,
      prompts: ['easy', 'hard-a', 'hard-b'],
      totalSamples: 30,
      initialSamples: 4,
      roundSize: 4,
      sampling: { maxNewTokens: 8, seed: 5 },
      extract,
      equals,
    });
    expect(result.results[0]!.samplesUsed).toBe(4);
    expect(result.results[0]!.answer).toBe('1');
    expect(result.samplesUsed).toBe(30);
    expect(result.unspent).toBe(0);
    expect(result.results[1]!.samplesUsed + result.results[2]!.samplesUsed).toBe(26);
    expect(sampler.sampleCalls[0]).toMatchObject({
      prompts: ['easy', 'hard-a', 'hard-b'],
      n: 4,
      seed: 5,
    });
    expect(sampler.sampleCalls.at(-1)!.seed).toBe(5 + sampler.sampleCalls.length - 1);
  });

  it('should stop early and report unspent budget when every prompt is decided', async () => {
    const sampler = new MockSampler({
      script: (request) =>
        request.prompts.map(() => Array.from({ length: request.n }, () => mockCompletion('A: 2'))),
    });
    const result = await allocateVotes({
      sampler,
      prompts: ['a', 'b'],
      totalSamples: 100,
      sampling: { maxNewTokens: 4 },
      extract,
      equals,
    });
    expect(result.samplesUsed).toBe(8);
    expect(result.unspent).toBe(92);
  });

  it('should reject a budget below one sample per prompt', async () => {
    const sampler = new MockSampler({ script: [] });
    await expect(
      allocateVotes({
        sampler,
        prompts: ['a', 'b'],
        totalSamples: 1,
        sampling: { maxNewTokens: 4 },
        extract,
        equals,
      }),
    ).rejects.toThrow(/options.totalSamples/);
  });
});
