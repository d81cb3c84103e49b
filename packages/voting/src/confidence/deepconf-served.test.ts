import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOpenAISampler } from '@rlvr/openai';
import { startOpenAICompatibleServer } from '@rlvr/openai/test';
import { createOnnxSampler } from '@rlvr/rollout';
import { describe, expect, it } from 'vitest';
import { vote } from '../sampling/sampled-vote.js';
import { deepConfOnline } from './deepconf-online.js';

const extract = (text: string) => (/[a-h]/.exec(text)?.[0] ?? null) as string | null;
const equals = (a: string, b: string) => a === b;

describe('deepConfOnline on a served model (streamed, vLLM completions shape)', () => {
  it('should stop traces through the stream and spend fewer tokens than majority voting', async () => {
    const files = buildCharTokenizer({ characters: 'abcdefgh \n' });
    const tokenizer = createTokenizer(files);
    const config = parseLlamaConfig({
      model_type: 'llama',
      hidden_size: 32,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      intermediate_size: 48,
      vocab_size: tokenizer.vocabSize,
      max_position_embeddings: 128,
    });
    const checkpoint = {
      ...createRandomCheckpoint(config, { seed: 3, std: 0.3 }),
      tokenizer: files,
    };
    const local = await createOnnxSampler({
      checkpoint,
      workers: 0,
      threads: 1,
      engine: 'optimum',
    });
    const server = await startOpenAICompatibleServer({
      sampler: local,
      tokenizer,
      dialect: 'vllm',
      model: 'tiny',
    });
    try {
      const sampler = createOpenAISampler({
        baseURL: server.baseURL,
        model: 'tiny',
        api: 'completions',
      });
      const questions = ['abc', 'hgf', 'bad', 'cafe'];
      const sampling = { maxNewTokens: 24, temperature: 1, seed: 1 };
      let deepconfTokens = 0;
      let majorityTokens = 0;
      let stopped = 0;
      for (const prompt of questions) {
        const start = server.log.length;
        const online = await deepConfOnline({
          sampler,
          prompt,
          sampling,
          maxSamples: 24,
          warmup: 8,
          keepTop: 50,
          windowSize: 4,
          topLogprobs: 5,
          batchSize: 4,
          consensus: 1,
          extract,
          equals,
        });
        stopped += online.earlyStopped;
        deepconfTokens += online.tokensUsed;
        // every stopped trace came through its own stream, which the client closed early
        const streams = server.log.slice(start).filter((entry) => entry.body?.stream === true);
        expect(streams.length).toBe(online.samplesUsed - online.warmupSamples);
        const closedEarly = streams.filter((entry) => entry.choicesServed === 0);
        expect(closedEarly.length).toBe(online.earlyStopped);
        const majority = await vote({ sampler, prompt, n: 24, sampling, extract, equals });
        majorityTokens += majority.tokensUsed;
      }
      console.log(
        `deepConfOnline over a served model: ${deepconfTokens} tokens (${stopped} traces stopped early) vs majority@24 ${majorityTokens} tokens (${((100 * deepconfTokens) / majorityTokens).toFixed(1)}%), ${questions.length} questions`,
      );
      expect(stopped).toBeGreaterThan(0);
      expect(deepconfTokens).toBeLessThan(majorityTokens);
    } finally {
      await server.close();
      await local.close();
    }
  }, 60_000);
});
