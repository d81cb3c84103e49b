import { exportOnnx } from '@rlvr/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GenerationSettings,
  generateBatch,
  type SequenceJob,
} from '../engine/generate-batch.js';
import { generateChunked } from '../engine/generate-chunked.js';
import { resolveLogitsOptions } from '../generation/logits-processors.js';
import { tinyCheckpoint } from '../onnx/__fixtures__/tiny-model.js';
import { OnnxDecoder } from '../onnx/onnx-decoder.js';
import { LoopDecoder } from './loop-decoder.js';
import { buildLoopGraph } from './loop-graph.js';

const checkpoint = tinyCheckpoint(3);
const session = { executionProviders: ['cpu' as const], threads: 1, allowSpinning: false };

function jobsFor(prompts: number[][], n: number): SequenceJob[] {
  return prompts.flatMap((promptTokenIds, promptIndex) =>
    Array.from({ length: n }, (_, sampleIndex) => ({ promptIndex, sampleIndex, promptTokenIds })),
  );
}

describe('LoopDecoder top-p sort tiers', () => {
  let loop: LoopDecoder;
  let optimum: OnnxDecoder;
  beforeAll(async () => {
    loop = await LoopDecoder.create(buildLoopGraph(checkpoint), session);
    optimum = await OnnxDecoder.create(exportOnnx(checkpoint), session);
  }, 60_000);
  afterAll(async () => {
    await loop.release();
    await optimum.release();
  });

  it.each([
    { topP: 0.97 }, // nucleus longer than both partial sorts: full sort
    { topP: 0.6 }, // usually within the partial sorts
    { topK: 9, topP: 0.9 }, // a top-k list longer than the partial sorts
    { topK: 3, topP: 0.7 },
  ])(
    'should match the JavaScript sampler with partial sorts of 2 and 4 tokens (%o)',
    async (options) => {
      loop.sortTiers = [2, 4];
      const settings: GenerationSettings = {
        sampling: resolveLogitsOptions({ temperature: 1.4, ...options }),
        maxNewTokens: 12,
        stop: [],
        seed: 5,
        returnModelLogprobs: true,
        eosTokenIds: [],
      };
      const jobs = jobsFor([[4, 5, 6], [9], [7, 7]], 4);
      const fromLoop = await generateChunked(loop, jobs, settings, 5);
      const reference = await generateBatch(optimum, jobs, settings);
      expect(fromLoop.map((item) => item.completion.tokenIds)).toEqual(
        reference.map((item) => item.completion.tokenIds),
      );
      fromLoop.forEach((item, index) => {
        item.completion.logprobs.forEach((value, step) => {
          expect(Math.abs(value - reference[index]!.completion.logprobs[step]!)).toBeLessThan(1e-5);
        });
      });
      // the full distribution was in play: some sampled token lies outside the 4 best
      if (options.topP === 0.97 && !('topK' in options)) {
        const lowest = Math.min(...fromLoop.flatMap((item) => item.completion.logprobs));
        expect(lowest).toBeLessThan(Math.log(0.1));
      }
    },
  );
});

describe('LoopDecoder across attention layouts', () => {
  it.each([1, 4])(
    'should sample exactly what the Optimum engine samples with %i KV head(s)',
    async (kvHeads) => {
      // Regression: with one KV head ORT reused the growing cache's buffer inside the Loop.
      const model = tinyCheckpoint(4, kvHeads);
      const loop = await LoopDecoder.create(buildLoopGraph(model), session);
      const optimum = await OnnxDecoder.create(exportOnnx(model), session);
      try {
        const settings: GenerationSettings = {
          sampling: resolveLogitsOptions({ temperature: 1 }),
          maxNewTokens: 10,
          stop: [],
          seed: 6,
          returnModelLogprobs: true,
          eosTokenIds: [],
        };
        const jobs = jobsFor([[4, 5, 6, 7], [9]], 3);
        const fromLoop = await generateChunked(loop, jobs, settings, 4);
        const reference = await generateBatch(optimum, jobs, settings);
        expect(fromLoop.map((item) => item.completion.tokenIds)).toEqual(
          reference.map((item) => item.completion.tokenIds),
        );
      } finally {
        await loop.release();
        await optimum.release();
      }
    },
    60_000,
  );
});
