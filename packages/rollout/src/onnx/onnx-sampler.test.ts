import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AbortedError, type Completion, logSoftmax, RlvrError } from '@rlvr/core';
import { createTokenizer, writeOnnxModel } from '@rlvr/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processLogits } from '../generation/logits-processors.js';
import { findStopString } from '../generation/stopping-criteria.js';
import { referenceLogits, tinyCheckpoint } from './__fixtures__/tiny-model.js';
import { createOnnxSampler, type OnnxSampler } from './onnx-sampler.js';

const checkpoint = tinyCheckpoint();
const tokenizer = createTokenizer(checkpoint.tokenizer!);
const EOS = tokenizer.eosTokenId!;
const TIMEOUT = 60_000;

/** Checks every completion's logprobs against the float64 reference within 1e-4. */
function expectReferenceLogprobs(
  prompts: number[][],
  groups: Completion[][],
  sampling: { temperature: number; topP?: number; topK?: number },
  model = checkpoint,
): void {
  let checked = 0;
  groups.forEach((group, promptIndex) => {
    for (const completion of group) {
      const sequence = [...prompts[promptIndex]!, ...completion.tokenIds];
      const logits = referenceLogits(model, sequence);
      completion.tokenIds.forEach((token, step) => {
        const row = logits[prompts[promptIndex]!.length - 1 + step]!;
        expect(Math.abs(logSoftmax(row)[token]! - completion.modelLogprobs![step]!)).toBeLessThan(
          1e-4,
        );
        const behaviour = processLogits(row, sampling);
        const index = behaviour.tokenIds.indexOf(token);
        expect(index).toBeGreaterThanOrEqual(0); // never samples a filtered token
        expect(Math.abs(behaviour.logprobs[index]! - completion.logprobs[step]!)).toBeLessThan(
          1e-4,
        );
        checked++;
      });
    }
  });
  expect(checked).toBeGreaterThan(20);
}

describe.each(['loop', 'optimum'] as const)(
  'createOnnxSampler (in-process, %s engine)',
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

    it('should implement Sampler v1 and return n completions per prompt', async () => {
      expect(sampler.specificationVersion).toBe('v1');
      expect(sampler.vocabSize).toBe(checkpoint.config.vocab_size);
      const groups = await sampler.sample({
        prompts: ['abc', [5, 6]],
        n: 3,
        maxNewTokens: 5,
        seed: 1,
      });
      expect(groups).toHaveLength(2);
      for (const group of groups) {
        expect(group).toHaveLength(3);
        for (const completion of group) {
          expect(completion.logprobs).toHaveLength(completion.tokenIds.length);
          expect(['stop', 'length']).toContain(completion.finishReason);
        }
      }
      expect(groups[0]![0]!.promptTokenIds).toEqual(tokenizer.encode('abc'));
      expect(groups[1]![0]!.promptTokenIds).toEqual([5, 6]);
    });

    it('should match the float64 reference logprobs (left-padded batch, shared prefill)', async () => {
      const prompts = [tokenizer.encode('abcdefg'), tokenizer.encode('h'), tokenizer.encode('ba')];
      const request = { prompts, n: 3, maxNewTokens: 12, seed: 3, returnModelLogprobs: true };
      const plain = await sampler.sample({ ...request, temperature: 0.7 });
      expectReferenceLogprobs(prompts, plain, { temperature: 0.7 });
      const filtered = await sampler.sample({ ...request, temperature: 1.2, topP: 0.8, topK: 6 });
      expectReferenceLogprobs(prompts, filtered, { temperature: 1.2, topP: 0.8, topK: 6 });
    });

    it('should reproduce samples for the same seed and differ for another', async () => {
      const request = { prompts: ['ab', 'c'], n: 4, maxNewTokens: 10, temperature: 1, seed: 11 };
      const first = await sampler.sample(request);
      expect(await sampler.sample(request)).toEqual(first);
      const other = await sampler.sample({ ...request, seed: 12 });
      expect(other.flat().map((c) => c.tokenIds)).not.toEqual(first.flat().map((c) => c.tokenIds));
      // a sequence does not depend on the other sequences in its batch
      const alone = await sampler.sample({ ...request, prompts: ['ab'] });
      expect(alone[0]!.map((c) => c.tokenIds)).toEqual(first[0]!.map((c) => c.tokenIds));
    });

    it('should cut stop strings across token boundaries and keep the completing token', async () => {
      const stop = ['ab', 'e\n', 'hh'];
      const groups = await sampler.sample({
        prompts: ['a', 'gh'],
        n: 16,
        maxNewTokens: 40,
        stop,
        seed: 5,
        temperature: 1.5,
      });
      let stopped = 0;
      for (const completion of groups.flat()) {
        const full = tokenizer.decode(completion.tokenIds, { skipSpecialTokens: true });
        expect(full.startsWith(completion.text)).toBe(true);
        expect(findStopString(completion.text, stop)).toBeUndefined();
        if (completion.finishReason === 'stop' && completion.tokenIds.at(-1) !== EOS) {
          stopped++;
          expect(findStopString(full, stop)?.index).toBe(completion.text.length);
          const before = tokenizer.decode(completion.tokenIds.slice(0, -1), {
            skipSpecialTokens: true,
          });
          expect(findStopString(before, stop)).toBeUndefined();
        }
      }
      expect(stopped).toBeGreaterThan(0);
    });

    it('should stop at EOS (kept in tokenIds, not in text) or at maxNewTokens', async () => {
      const groups = await sampler.sample({ prompts: ['abc'], n: 24, maxNewTokens: 6, seed: 9 });
      const reasons = new Set<string>();
      for (const completion of groups.flat()) {
        reasons.add(completion.finishReason);
        const eosAt = completion.tokenIds.indexOf(EOS);
        if (completion.finishReason === 'stop') expect(eosAt).toBe(completion.tokenIds.length - 1);
        else {
          expect(eosAt).toBe(-1);
          expect(completion.tokenIds).toHaveLength(6);
        }
        expect(completion.text).toBe(
          tokenizer.decode(completion.tokenIds, { skipSpecialTokens: true }),
        );
      }
      expect(reasons).toEqual(new Set(['stop', 'length']));
      const custom = await sampler.sample({
        prompts: [[4]],
        n: 1,
        maxNewTokens: 4,
        temperature: 0,
      });
      expect(custom[0]![0]!.logprobs.every((value) => value === 0)).toBe(true); // greedy
    });

    it('should render chat-template prompts', async () => {
      const chat = await createOnnxSampler({
        checkpoint,
        workers: 0,
        promptFormat: 'chat',
        engine,
      });
      try {
        const [[completion]] = (await chat.sample({ prompts: ['ab'], n: 1, maxNewTokens: 1 })) as [
          [Completion],
        ];
        expect(tokenizer.decode(completion.promptTokenIds!)).toBe('<bos>ab\nh ');
      } finally {
        await chat.close();
      }
    });

    it('should update weights and sample from the new model', async () => {
      const other = tinyCheckpoint(2);
      const local = await createOnnxSampler({ checkpoint, workers: 0, threads: 1, engine });
      try {
        await local.updateWeights({ step: 1, tensors: other.tensors });
        expect(local.lastWeightSync!.totalMs).toBeGreaterThan(0);
        const prompts = [tokenizer.encode('dc')];
        const groups = await local.sample({
          prompts,
          n: 4,
          maxNewTokens: 8,
          seed: 2,
          returnModelLogprobs: true,
        });
        expectReferenceLogprobs(
          prompts,
          groups,
          { temperature: 1 },
          { ...checkpoint, tensors: other.tensors },
        );
        await expect(
          local.updateWeights({
            step: 2,
            tensors: [{ name: 'nope', shape: [1], data: new Float32Array(1) }],
          }),
        ).rejects.toThrow(/snapshot.tensors\[0\].name/);
        await expect(
          local.updateWeights({
            step: 2,
            tensors: [{ ...other.tensors[0]!, data: new Float32Array(3) }],
          }),
        ).rejects.toThrow(/snapshot.tensors\[0\]/);
      } finally {
        await local.close();
      }
    });

    it('should validate requests and options with typed errors', async () => {
      await expect(sampler.sample({ prompts: ['a'], n: 0, maxNewTokens: 1 })).rejects.toThrow(
        /request.n/,
      );
      await expect(
        sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 1, topP: 2 }),
      ).rejects.toThrow(/request.topP/);
      await expect(sampler.sample({ prompts: [[999]], n: 1, maxNewTokens: 1 })).rejects.toThrow(
        /request.prompts\[0\]/,
      );
      await expect(createOnnxSampler({} as never)).rejects.toThrow(/exactly one of/);
      await expect(createOnnxSampler({ checkpoint, workers: -1 })).rejects.toThrow(
        /options.workers/,
      );
      await expect(
        createOnnxSampler({ checkpoint, executionProviders: ['tpu' as never] }),
      ).rejects.toThrow(/executionProviders\[0\]/);
      const controller = new AbortController();
      controller.abort();
      await expect(
        sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 1 }, { signal: controller.signal }),
      ).rejects.toSatisfy(AbortedError.isInstance);
    });

    it('should fail with UNAVAILABLE when the CUDA execution provider is not installed', async () => {
      const ortDir = dirname(
        createRequire(import.meta.url).resolve('onnxruntime-node/package.json'),
      );
      const cuda = join(
        ortDir,
        'bin/napi-v6',
        `${process.platform}/${process.arch}`,
        'libonnxruntime_providers_cuda.so',
      );
      if (existsSync(cuda)) return; // CUDA binaries installed here: nothing to check
      const error = await createOnnxSampler({
        checkpoint,
        workers: 0,
        engine,
        executionProviders: ['cuda'],
      }).catch((caught: unknown) => caught);
      expect(RlvrError.isInstance(error)).toBe(true);
      expect((error as RlvrError).code).toBe('UNAVAILABLE');
      expect((error as RlvrError).message).toMatch(/cuda/);
      expect((error as RlvrError).cause).toBeDefined();
    });
  },
);

describe.each(['optimum', 'loop'] as const)(
  'createOnnxSampler (worker threads, %s engine)',
  (engine) => {
    let sampler: OnnxSampler;
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'rlvr-rollout-'));
      const onnxPath = await writeOnnxModel(dir, checkpoint);
      sampler =
        engine === 'optimum'
          ? await createOnnxSampler({
              onnxPath,
              tokenizer: checkpoint.tokenizer,
              workers: 2,
              threads: 1,
            })
          : await createOnnxSampler({ checkpoint, workers: 2, threads: 1, stepsPerRun: 5 });
    }, TIMEOUT);
    afterAll(async () => {
      await sampler.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('should give the same samples as the in-process engine (split across 2 workers)', async () => {
      const local = await createOnnxSampler({ checkpoint, workers: 0, engine });
      try {
        const request = {
          prompts: ['abc', 'h', [7, 8, 9]],
          n: 3,
          maxNewTokens: 10,
          seed: 21,
          topP: 0.9,
          returnModelLogprobs: true,
        };
        const fromWorkers = await sampler.sample(request);
        const inProcess = await local.sample(request);
        expect(fromWorkers.flat().map((c) => c.tokenIds)).toEqual(
          inProcess.flat().map((c) => c.tokenIds),
        );
        fromWorkers.flat().forEach((completion, index) => {
          const expected = inProcess.flat()[index]!;
          completion.logprobs.forEach((value, step) => {
            expect(Math.abs(value - expected.logprobs[step]!)).toBeLessThan(1e-5);
          });
          expect(completion.text).toBe(expected.text);
        });
      } finally {
        await local.close();
      }
    });

    it('should stream tokens that add up to the final completions', async () => {
      const streamed = new Map<string, number[]>();
      const finals = new Map<string, Completion>();
      for await (const event of sampler.stream({
        prompts: ['ab', 'cd'],
        n: 2,
        maxNewTokens: 8,
        seed: 4,
      })) {
        const key = `${event.promptIndex}/${event.sampleIndex}`;
        if (event.type === 'token')
          streamed.set(key, [...(streamed.get(key) ?? []), event.tokenId]);
        else finals.set(key, event.completion);
      }
      expect(finals.size).toBe(4);
      for (const [key, completion] of finals)
        expect(streamed.get(key)).toEqual(completion.tokenIds);
    });

    it('should end an aborted stream with AbortedError without blocking the event loop', async () => {
      const controller = new AbortController();
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const events = sampler.stream(
        { prompts: ['a'], n: 4, maxNewTokens: 200, seed: 1, temperature: 1 },
        { signal: controller.signal },
      );
      let tokens = 0;
      let completions = 0;
      const error = await (async () => {
        for await (const event of events) {
          if (event.type === 'token') tokens++;
          if (event.type === 'token' && ticks > 0) controller.abort();
          if (event.type === 'completion') completions++;
        }
      })().catch((caught: unknown) => caught);
      clearInterval(timer);
      expect(ticks).toBeGreaterThan(0);
      expect(tokens).toBeGreaterThan(0);
      expect(AbortedError.isInstance(error)).toBe(true);
      expect(completions).toBe(0); // never partial completions
    });
  },
);

describe('loop engine vs optimum engine', () => {
  let loop: OnnxSampler;
  let optimum: OnnxSampler;
  beforeAll(async () => {
    loop = await createOnnxSampler({ checkpoint, workers: 0, threads: 1, stepsPerRun: 3 });
    optimum = await createOnnxSampler({ checkpoint, workers: 0, threads: 1, engine: 'optimum' });
  }, TIMEOUT);
  afterAll(async () => {
    await loop.close();
    await optimum.close();
  });

  it.each([
    { temperature: 1 },
    { temperature: 0.7, topP: 0.8 },
    { temperature: 1.3, topK: 5, topP: 0.9 },
    { temperature: 1, minP: 0.2 },
    { temperature: 0.9, repetitionPenalty: 1.6 },
    { temperature: 0, repetitionPenalty: 1.3 },
    { temperature: 0 },
  ])('should draw the same tokens with the same logprobs for %o', async (sampling) => {
    const request = {
      prompts: ['abc', 'h', [7, 8, 9, 4, 5]],
      n: 5,
      maxNewTokens: 14,
      stop: ['hh'],
      seed: 17,
      returnModelLogprobs: true,
      ...sampling,
    };
    const fromLoop = (await loop.sample(request)).flat();
    const fromOptimum = (await optimum.sample(request)).flat();
    expect(fromLoop.map((c) => c.tokenIds)).toEqual(fromOptimum.map((c) => c.tokenIds));
    expect(fromLoop.map((c) => c.finishReason)).toEqual(fromOptimum.map((c) => c.finishReason));
    expect(fromLoop.map((c) => c.text)).toEqual(fromOptimum.map((c) => c.text));
    fromLoop.forEach((completion, index) => {
      const expected = fromOptimum[index]!;
      completion.logprobs.forEach((value, step) => {
        expect(Math.abs(value - expected.logprobs[step]!)).toBeLessThan(1e-5);
        expect(
          Math.abs(completion.modelLogprobs![step]! - expected.modelLogprobs![step]!),
        ).toBeLessThan(1e-5);
      });
    });
  });

  it('should reject the loop engine without a checkpoint and bad stepsPerRun', async () => {
    await expect(createOnnxSampler({ onnxPath: '/nope.onnx', engine: 'loop' })).rejects.toThrow(
      /options.engine/,
    );
    await expect(createOnnxSampler({ checkpoint, stepsPerRun: 0 })).rejects.toThrow(
      /options.stepsPerRun/,
    );
    await expect(createOnnxSampler({ checkpoint, engine: 'x' as never })).rejects.toThrow(
      /options.engine/,
    );
  });
});
