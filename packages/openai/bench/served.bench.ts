/**
 * Served-model sampling against the local sampler on the same model: `pnpm --filter @rlvr/openai
 * bench` (env: BENCH_REPEATS, default 7). The server is @rlvr/openai/test's OpenAI-compatible server
 * (vLLM shapes, /v1/completions) generating with `createOnnxSampler` (1 worker thread) on a random
 * Llama (d 128, 4 layers, char vocabulary), in this process; the local baseline is the same
 * sampler called directly. Rows: n = 16 samples × 64 new tokens per request at temperature 1;
 * per-request overhead = served median − local median; then BENCH_PROMPTS (8) prompts × n 16 at
 * concurrency 1–16 (medians of 3), without and with 50 ms of added server latency per request (a network round trip).
 * Medians of BENCH_REPEATS runs, measured side by side in one run: compare rows of one run.
 */
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { createOpenAISampler } from '../src/index.js';
import { startOpenAICompatibleServer } from '../src/testing/index.js';

const REPEATS = Number(process.env.BENCH_REPEATS ?? 7);
const N = 16;
const TOKENS = 64;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function time(fn: () => Promise<unknown>, repeats = REPEATS): Promise<number> {
  await fn(); // warm-up
  const times: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

const files = buildCharTokenizer({ characters: 'abcdefghijklmnopqrstuvwxyz0123456789 +=.,\n' });
const tokenizer = createTokenizer(files);
const config = parseLlamaConfig({
  model_type: 'llama',
  hidden_size: 128,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 256,
  vocab_size: tokenizer.vocabSize,
  max_position_embeddings: 256,
});
// no EOS inside the vocabulary's reach would still stop early: ignore it so every sample has 64 tokens
const checkpoint = { ...createRandomCheckpoint(config, { seed: 1, std: 0.05 }), tokenizer: files };
const local = await createOnnxSampler({ checkpoint, workers: 1, threads: 1, eosTokenIds: [] });
let latencyMs = 0;
const server = await startOpenAICompatibleServer({
  sampler: local,
  tokenizer,
  dialect: 'vllm',
  model: 'bench',
  fault: () => (latencyMs > 0 ? { type: 'delay', ms: latencyMs } : undefined),
});
const request = { n: N, maxNewTokens: TOKENS, temperature: 1, seed: 1 } as const;
const served = createOpenAISampler({ baseURL: server.baseURL, model: 'bench', api: 'completions' });

console.log(
  `model: ${config.hidden_size}d × ${config.num_hidden_layers} layers, vocab ${config.vocab_size}; ${N} samples × ${TOKENS} tokens per request; medians of ${REPEATS}`,
);
const textOnly = createOpenAISampler({
  baseURL: server.baseURL,
  model: 'bench',
  api: 'completions',
  logprobs: false,
});
// alternating, so drift of the shared machine hits every path alike
const paths = {
  local: () => local.sample({ ...request, prompts: ['12+30='], returnModelLogprobs: true }),
  served: () => served.sample({ ...request, prompts: ['12+30='] }),
  text: () => textOnly.sample({ ...request, prompts: ['12+30='] }),
};
const times: Record<keyof typeof paths, number[]> = { local: [], served: [], text: [] };
for (const run of Object.values(paths)) await run(); // warm-up
for (let repeat = 0; repeat < REPEATS; repeat++) {
  for (const [name, run] of Object.entries(paths) as [
    keyof typeof paths,
    () => Promise<unknown>,
  ][]) {
    const start = performance.now();
    await run();
    times[name].push(performance.now() - start);
  }
}
const localMs = median(times.local);
const servedMs = median(times.served);
const textMs = median(times.text);
const rate = (ms: number, samples = N) => ((samples * 1000) / ms).toFixed(1);
console.log('| path | ms per request | samples/s | overhead per request |');
console.log('| --- | --- | --- | --- |');
console.log(`| local createOnnxSampler | ${localMs.toFixed(1)} | ${rate(localMs)} | — |`);
console.log(
  `| served, logprobs + token ids | ${servedMs.toFixed(1)} | ${rate(servedMs)} | ${(servedMs - localMs).toFixed(1)} ms (${((100 * (servedMs - localMs)) / localMs).toFixed(1)}%) |`,
);
console.log(
  `| served, text only (logprobs: false) | ${textMs.toFixed(1)} | ${rate(textMs)} | ${(textMs - localMs).toFixed(1)} ms |`,
);

const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 8);
const prompts = Array.from({ length: PROMPTS }, (_, index) => `${index}+${2 * index}=`);
const localAll = await time(
  () => local.sample({ ...request, prompts, returnModelLogprobs: true }),
  3,
);
console.log(
  `\n${PROMPTS} prompts × n ${N} × ${TOKENS} tokens: local (one call) ${rate(localAll, PROMPTS * N)} samples/s`,
);
console.log('| concurrency | samples/s | samples/s with 50 ms server latency |');
console.log('| --- | --- | --- |');
for (const concurrency of [1, 2, 4, 8, 16]) {
  const sampler = createOpenAISampler({
    baseURL: server.baseURL,
    model: 'bench',
    api: 'completions',
    concurrency,
  });
  latencyMs = 0;
  const plain = await time(() => sampler.sample({ ...request, prompts }), 3);
  latencyMs = 50;
  const slow = await time(() => sampler.sample({ ...request, prompts }), 3);
  latencyMs = 0;
  console.log(`| ${concurrency} | ${rate(plain, PROMPTS * N)} | ${rate(slow, PROMPTS * N)} |`);
}
await server.close();
await local.close();
