import { AbortedError } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { type SimulatedTrace, TraceSampler } from '../testing/trace-sampler.js';
import { deepConfOnline, percentile } from './deepconf-online.js';

const extract = (text: string) => /\\boxed\{([^}]*)\}/.exec(text)?.[1] || null;
const equals = (a: string, b: string) => a === b;

/** Plays `traces` in order, one per sampled completion; each token of a trace has confidence c. */
function scripted(traces: [string, number][], length = 6): TraceSampler {
  let next = 0;
  return new TraceSampler((): SimulatedTrace => {
    const [answer, c] = traces[next++]!;
    return { answer, confidences: new Array<number>(length).fill(c) };
  });
}

// warm-up: '7' 3, '5' 2, '7' 2.5, '5' 1; then pairs of traces
const SCRIPT: [string, number][] = [
  ['7', 3],
  ['5', 2],
  ['7', 2.5],
  ['5', 1],
  ['5', 1], // below the threshold: stopped at its 3rd token, never votes
  ['7', 3],
  ['7', 4],
  ['7', 4],
  ['7', 4],
  ['7', 4],
];
const base = {
  prompt: 'q',
  sampling: { maxNewTokens: 6, seed: 10 },
  warmup: 4,
  keepTop: 75,
  windowSize: 3,
  batchSize: 2,
  extract,
  equals,
};

describe('deepConfOnline', () => {
  it('should set the threshold from the warm-up, stop low-confidence traces and vote (hand-worked)', async () => {
    const sampler = scripted(SCRIPT);
    const result = await deepConfOnline({ ...base, sampler, maxSamples: 10 });
    // s = 25th percentile of [3, 2, 2.5, 1] = 1 + 0.75 · (2 − 1) = 1.75
    expect(result.stopThreshold).toBeCloseTo(1.75, 12);
    expect(sampler.requests[0]).toMatchObject({ n: 4, topLogprobs: 20, seed: 10 });
    expect(sampler.requests[0]!.confidenceStop).toBeUndefined();
    expect(sampler.requests.slice(1).map((r) => [r.n, r.seed, r.confidenceStop])).toEqual([
      [2, 11, { windowSize: 3, threshold: 1.75 }],
      [2, 12, { windowSize: 3, threshold: 1.75 }],
      [2, 13, { windowSize: 3, threshold: 1.75 }],
    ]);
    // shares after each call: 5.5/7.5, 8.5/10.5, 16.5/18.5, 24.5/26.5: never ≥ 0.95
    expect(result.stoppedBecause).toBe('sample-budget');
    expect(result.samplesUsed).toBe(10);
    expect(result.earlyStopped).toBe(1);
    expect(result.completions[4]!.finishReason).toBe('confidence');
    expect(result.tokensUsed).toBe(9 * 6 + 3);
    expect(result.answer).toBe('7');
    expect(result.share).toBeCloseTo(24.5 / 26.5, 12);
    expect(result.excludedIndices).toEqual([4]);
    expect(result.filteredIndices).toEqual([3]); // the warm-up '5' at 1 < s
    expect(result.clusters.map((c) => [c.answer, c.members])).toEqual([
      ['7', [0, 2, 5, 6, 7, 8, 9]],
      ['5', [1]],
    ]);
  });

  it('should stop at the weighted consensus tau', async () => {
    const result = await deepConfOnline({
      ...base,
      sampler: scripted(SCRIPT),
      maxSamples: 10,
      consensus: 0.8,
    });
    expect(result.stoppedBecause).toBe('consensus');
    expect(result.samplesUsed).toBe(6);
    expect(result.share).toBeCloseTo(8.5 / 10.5, 12);
  });

  it('should never exceed the token budget', async () => {
    const sampler = scripted(SCRIPT);
    const result = await deepConfOnline({ ...base, sampler, maxSamples: 10, maxTokens: 30 });
    expect(sampler.requests[1]!.maxNewTokens).toBe(3); // 6 tokens left for 2 traces
    expect(result.tokensUsed).toBe(30);
    expect(result.stoppedBecause).toBe('token-budget');
  });

  it('should follow the abort contract', async () => {
    const aborted = new MockSampler({
      script: (request) =>
        request.prompts.map(() =>
          Array.from({ length: request.n }, (_, i) =>
            mockCompletion('x', { finishReason: i === 0 ? 'abort' : 'stop' }),
          ),
        ),
    });
    await expect(deepConfOnline({ ...base, sampler: aborted, maxSamples: 8 })).rejects.toSatisfy(
      AbortedError.isInstance,
    );
    const controller = new AbortController();
    controller.abort('user');
    await expect(
      deepConfOnline({
        ...base,
        sampler: scripted(SCRIPT),
        maxSamples: 8,
        signal: controller.signal,
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);
  });

  it('should reject unknown and misplaced options naming them', async () => {
    const sampler = scripted(SCRIPT);
    await expect(
      deepConfOnline({ ...base, sampler, maxSamples: 4, warmUp: 2 } as never),
    ).rejects.toThrow(/did you mean 'warmup'/);
    await expect(
      deepConfOnline({
        ...base,
        sampler,
        maxSamples: 4,
        sampling: { maxNewTokens: 4, topLogprobs: 5 } as never,
      }),
    ).rejects.toThrow(/options\.sampling\.topLogprobs/);
    await expect(deepConfOnline({ ...base, sampler, maxSamples: 4, keepTop: 0 })).rejects.toThrow(
      /options\.keepTop/,
    );
    await expect(
      deepConfOnline({ ...base, sampler, maxSamples: 4, consensus: 1.5 }),
    ).rejects.toThrow(/options\.consensus/);
  });

  it('should reject a sampler that ignores topLogprobs, naming it', async () => {
    const plain = new MockSampler({
      script: (request) =>
        request.prompts.map(() => Array.from({ length: request.n }, () => mockCompletion('x'))),
    });
    await expect(deepConfOnline({ ...base, sampler: plain, maxSamples: 4 })).rejects.toThrow(
      /options\.sampler.*topLogprobs/,
    );
  });

  it('should compute percentiles as numpy does (linear interpolation)', () => {
    expect(percentile([1, 2, 3, 4], 90)).toBeCloseTo(3.7, 12);
    expect(percentile([5], 10)).toBe(5);
    expect(percentile([], 50)).toBeNaN();
  });
});
