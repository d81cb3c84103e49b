import { type Completion, logSoftmax } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenConfidence } from '../generation/confidence-stop.js';
import { referenceLogits, tinyCheckpoint } from './__fixtures__/tiny-model.js';
import { createOnnxSampler, type OnnxSampler } from './onnx-sampler.js';

const checkpoint = tinyCheckpoint();
const VOCAB = checkpoint.config.vocab_size;
const TIMEOUT = 60_000;
const PROMPTS = [
  [1, 4, 5],
  [1, 8, 9, 10, 6],
];

/** The k most likely ids of a float64 row (ties to the lower id) and their logprobs. */
function referenceTop(row: Float64Array, k: number) {
  const logprobs = logSoftmax(row);
  return Array.from(logprobs, (logprob, tokenId) => ({ tokenId, logprob }))
    .sort((a, b) => b.logprob - a.logprob || a.tokenId - b.tokenId)
    .slice(0, k);
}

/** Where DeepConf's window first falls below `threshold` (−1: never), from a completion's tops. */
function expectedStop(completion: Completion, windowSize: number, threshold: number): number {
  const confidences = completion.topLogprobs!.map(tokenConfidence);
  for (let end = windowSize - 1; end < confidences.length; end++) {
    const window = confidences.slice(end - windowSize + 1, end + 1);
    if (window.reduce((a, b) => a + b, 0) / windowSize < threshold) return end;
  }
  return -1;
}

describe.each(['loop', 'optimum'] as const)(
  'topLogprobs and confidenceStop (%s engine)',
  (engine) => {
    let sampler: OnnxSampler;
    beforeAll(async () => {
      sampler = await createOnnxSampler({
        checkpoint,
        workers: 0,
        threads: 1,
        engine,
        ...(engine === 'loop' ? { stepsPerRun: 4 } : {}),
      });
    }, TIMEOUT);
    afterAll(() => sampler.close());

    const sampling = { temperature: 0.9, topP: 0.9, repetitionPenalty: 1.3, seed: 5 };

    it('should return the model distribution top-k per token, as the float64 reference', async () => {
      const request = { prompts: PROMPTS, n: 3, maxNewTokens: 9, ...sampling };
      const plain = await sampler.sample(request);
      const groups = await sampler.sample({ ...request, topLogprobs: 5 });
      let checked = 0;
      groups.forEach((group, promptIndex) => {
        group.forEach((completion, sampleIndex) => {
          // asking for top logprobs does not change what is sampled
          expect(completion.tokenIds).toEqual(plain[promptIndex]![sampleIndex]!.tokenIds);
          expect(completion.topLogprobs).toHaveLength(completion.tokenIds.length);
          const prompt = PROMPTS[promptIndex]!;
          const rows = referenceLogits(checkpoint, [...prompt, ...completion.tokenIds]);
          completion.topLogprobs!.forEach((top, step) => {
            const reference = referenceTop(rows[prompt.length - 1 + step]!, 5);
            expect(top.map((entry) => entry.tokenId)).toEqual(reference.map((e) => e.tokenId));
            top.forEach((entry, index) => {
              expect(Math.abs(entry.logprob - reference[index]!.logprob)).toBeLessThan(1e-5);
            });
            checked++;
          });
        });
        expect(plain[promptIndex]![0]!.topLogprobs).toBeUndefined();
      });
      expect(checked).toBeGreaterThan(30);
    });

    it('should end a completion at the token whose window confidence falls below the threshold', async () => {
      const request = { prompts: PROMPTS, n: 4, maxNewTokens: 13, topLogprobs: 4, ...sampling };
      const full = (await sampler.sample(request)).flat();
      const windowSize = 3;
      // the median of every completion's lowest window: about half of them stop
      const lowest = full.map((completion) => {
        const c = completion.topLogprobs!.map(tokenConfidence);
        let min = Infinity;
        for (let end = windowSize - 1; end < c.length; end++)
          min = Math.min(min, (c[end]! + c[end - 1]! + c[end - 2]!) / 3);
        return min;
      });
      const threshold = [...lowest].sort((a, b) => a - b)[Math.floor(lowest.length / 2)]!;
      const stopped = (
        await sampler.sample({ ...request, confidenceStop: { windowSize, threshold } })
      ).flat();
      let cut = 0;
      stopped.forEach((completion, index) => {
        const reference = full[index]!;
        const end = expectedStop(reference, windowSize, threshold);
        if (end >= 0 && end < reference.tokenIds.length - 1) {
          expect(completion.finishReason).toBe('confidence');
          expect(completion.tokenIds).toEqual(reference.tokenIds.slice(0, end + 1));
          expect(completion.logprobs).toEqual(reference.logprobs.slice(0, end + 1));
          expect(completion.topLogprobs).toEqual(reference.topLogprobs!.slice(0, end + 1));
          cut++;
        } else if (end === reference.tokenIds.length - 1 && reference.finishReason === 'length') {
          // the window fell at the last token: the completion ends there anyway ('length' wins)
          expect(completion.finishReason).toBe('length');
        } else {
          expect(completion).toEqual(reference);
        }
      });
      expect(cut).toBeGreaterThanOrEqual(2);
      expect(cut).toBeLessThan(stopped.length);
    });

    it('should handle one-token requests and a last chunk of one step', async () => {
      for (const maxNewTokens of [1, 5]) {
        const [group] = await sampler.sample({
          prompts: [PROMPTS[0]!],
          n: 2,
          maxNewTokens,
          topLogprobs: VOCAB,
          seed: 1,
        });
        for (const completion of group!) {
          expect(completion.topLogprobs).toHaveLength(completion.tokenIds.length);
          for (const top of completion.topLogprobs!) {
            expect(top).toHaveLength(VOCAB);
            const mass = top.reduce((sum, entry) => sum + Math.exp(entry.logprob), 0);
            expect(mass).toBeCloseTo(1, 5);
          }
        }
      }
    });

    it('should reject bad topLogprobs and confidenceStop naming the parameter', async () => {
      const base = { prompts: PROMPTS, n: 1, maxNewTokens: 2 };
      await expect(sampler.sample({ ...base, topLogprobs: VOCAB + 1 })).rejects.toThrow(
        /request\.topLogprobs/,
      );
      await expect(
        sampler.sample({ ...base, confidenceStop: { windowSize: 2, threshold: 1 } }),
      ).rejects.toThrow(/request\.confidenceStop.*topLogprobs/);
      await expect(
        sampler.sample({
          ...base,
          topLogprobs: 2,
          confidenceStop: { windowSize: 0, threshold: 1 },
        }),
      ).rejects.toThrow(/request\.confidenceStop\.windowSize/);
    });
  },
);

describe('topLogprobs through a worker thread', () => {
  it(
    'should cross the worker protocol (plain data) and equal the in-process result',
    async () => {
      const request = {
        prompts: PROMPTS,
        n: 2,
        maxNewTokens: 6,
        seed: 3,
        topLogprobs: 3,
        confidenceStop: { windowSize: 2, threshold: 0.4 },
      };
      const local = await createOnnxSampler({ checkpoint, workers: 0, engine: 'optimum' });
      const pooled = await createOnnxSampler({ checkpoint, workers: 1, engine: 'optimum' });
      try {
        const [a, b] = [await local.sample(request), await pooled.sample(request)];
        expect(b).toEqual(a);
        expect(a[0]![0]!.topLogprobs![0]).toHaveLength(3);
      } finally {
        await Promise.all([local.close(), pooled.close()]);
      }
    },
    TIMEOUT,
  );
});
