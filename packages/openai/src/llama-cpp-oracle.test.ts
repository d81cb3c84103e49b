import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeGgufModel } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { getLlama, LlamaLogLevel, type Token } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import { tinyCheckpoint } from './__fixtures__/tiny-model.js';
import { createOpenAISampler } from './openai-sampler.js';
import { startOpenAICompatibleServer } from './testing/openai-compatible-server.js';

const SAMPLING = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;

describe('served raw logprobs against an independent engine (llama.cpp on our GGUF export)', () => {
  it('should equal log p of each sampled token under llama.cpp within 1e-4', async () => {
    const { checkpoint, tokenizer } = tinyCheckpoint(9);
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-openai-gguf-'));
    const local = await createOnnxSampler({ checkpoint, workers: 0, threads: 1 });
    const server = await startOpenAICompatibleServer({
      sampler: local,
      tokenizer,
      dialect: 'llama-server',
      model: 'tiny',
    });
    const llama = await getLlama({
      gpu: false,
      build: 'never',
      skipDownload: true,
      logLevel: LlamaLogLevel.error,
    });
    const model = await llama.loadModel({
      modelPath: await writeGgufModel(dir, checkpoint, { dtype: 'f32' }),
      gpuLayers: 0,
    });
    const context = await model.createContext({
      contextSize: 256,
      sequences: 3,
      batchSize: 64,
      threads: 1,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    try {
      const sampler = createOpenAISampler({
        baseURL: server.baseURL,
        model: 'tiny',
        api: 'completions',
      });
      const prompt = tokenizer.encode('ab 12');
      const [group] = await sampler.sample({
        prompts: [prompt],
        n: 3,
        maxNewTokens: 12,
        temperature: 0.7,
        topP: 0.9,
        seed: 4,
      });
      let worst = 0;
      let compared = 0;
      for (const completion of group!) {
        expect(completion.behaviourLogprobs).toBe(false);
        const ids = [...prompt, ...completion.tokenIds];
        const sequence = context.getSequence();
        const results = await sequence.controlledEvaluate(
          ids
            .slice(0, -1)
            .map((token, position) =>
              position >= prompt.length - 1
                ? [token as Token, { generateNext: { probabilities: true, options: SAMPLING } }]
                : (token as Token),
            ),
        );
        sequence.dispose();
        for (const [t, tokenId] of completion.tokenIds.entries()) {
          const probabilities = results[prompt.length - 1 + t]?.next.probabilities;
          const p = probabilities?.get(tokenId as Token);
          expect(p).toBeGreaterThan(0);
          worst = Math.max(worst, Math.abs(Math.log(p!) - completion.logprobs[t]!));
          compared++;
        }
      }
      console.log(
        `llama.cpp vs served raw logprobs: max |Δ log p| ${worst.toExponential(2)} over ${compared} tokens`,
      );
      expect(compared).toBeGreaterThan(5);
      expect(worst).toBeLessThan(1e-4);
    } finally {
      await context.dispose();
      await model.dispose();
      await server.close();
      await local.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
