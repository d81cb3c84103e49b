import { buildCharTokenizer, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceConfidence } from './confidence.js';
import { deepConfOnline, percentile } from './deepconf-online.js';

/** A tiny random Llama with a character tokenizer: its "answer" is the first character it writes. */
function tinyModel() {
  const tokenizer = buildCharTokenizer({ characters: 'abcdefgh \n' });
  const config = parseLlamaConfig({
    model_type: 'llama',
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: 14,
    max_position_embeddings: 128,
  });
  return { ...createRandomCheckpoint(config, { seed: 3, std: 0.3 }), tokenizer };
}

const extract = (text: string) => (/[a-h]/.exec(text)?.[0] ?? null) as string | null;
const equals = (a: string, b: string) => a === b;

describe.each(['optimum', 'loop'] as const)(
  'deepConfOnline on a real ONNX sampler (%s)',
  (engine) => {
    let sampler: OnnxSampler;
    beforeAll(async () => {
      sampler = await createOnnxSampler({
        checkpoint: tinyModel(),
        workers: 0,
        threads: 1,
        engine,
      });
    }, 60_000);
    afterAll(() => sampler.close());

    it('should stop traces at the warm-up threshold and vote only over complete ones', async () => {
      const windowSize = 4;
      const options = {
        sampler,
        prompt: 'abc',
        sampling: { maxNewTokens: 16, temperature: 1, seed: 1 },
        maxSamples: 24,
        warmup: 8,
        keepTop: 50,
        windowSize,
        topLogprobs: 5,
        batchSize: 4,
        consensus: 1,
        extract,
        equals,
      };
      const result = await deepConfOnline(options);
      const measure = { measure: 'lowest-group', windowSize } as const;
      const warm = result.completions.slice(0, 8);
      expect(warm.every((c) => c.finishReason !== 'confidence')).toBe(true);
      const s = percentile(
        warm.map((c) => traceConfidence(c.topLogprobs!, measure)),
        50,
      );
      expect(result.stopThreshold).toBeCloseTo(s, 12);
      expect(result.earlyStopped).toBeGreaterThan(0);
      expect(result.samplesUsed).toBeGreaterThan(8);
      for (const [index, completion] of result.completions.entries()) {
        expect(completion.topLogprobs).toHaveLength(completion.tokenIds.length);
        if (completion.finishReason === 'confidence') {
          // stopped at the first token whose window fell below s
          const tops = completion.topLogprobs!;
          expect(traceConfidence(tops.slice(-windowSize), { measure: 'mean' })).toBeLessThan(s);
          if (tops.length > windowSize)
            expect(traceConfidence(tops.slice(0, -1), measure)).toBeGreaterThanOrEqual(s);
          expect(result.confidences[index]).toBeNull();
          expect(result.keptIndices).not.toContain(index);
        } else if (result.keptIndices.includes(index)) {
          expect(result.confidences[index]!).toBeGreaterThanOrEqual(s);
        }
      }
      const voted = result.clusters.flatMap((cluster) => cluster.members);
      expect(voted.every((index) => result.completions[index]!.finishReason !== 'confidence')).toBe(
        true,
      );
      expect(result.tokensUsed).toBe(
        result.completions.reduce((sum, completion) => sum + completion.tokenIds.length, 0),
      );
      // deterministic for a seed
      const again = await deepConfOnline(options);
      expect(again.completions).toEqual(result.completions);
      expect(again.answer).toBe(result.answer);
    }, 60_000);
  },
);
