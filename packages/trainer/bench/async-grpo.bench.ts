/**
 * Step time of GrpoTrainer, synchronous (`maxStaleness: 0`) vs asynchronous (`maxStaleness: 1`,
 * `2`): a real tiny model (hidden 64, 2 layers, vocab 64) trained on 4 prompts × 8 samples × 16
 * tokens per step, with a fake sampler of fixed latency (a remote fleet stand-in: it answers after
 * LATENCY_MS without using this process's CPU), either one server answering one request at a
 * time (steps cost about max(latency, update) when asynchronous, latency + update when not) or a
 * parallel fleet (k + 1 requests in flight: about max(latency / (k + 1), update)).
 *
 * Run: `npx tsx bench/async-grpo.bench.ts` in packages/trainer.
 * Env: BENCH_STEPS (default 6), LATENCY_MS (default 500,2000), BENCH_BACKEND (default wasm).
 */
import { type Completion, createRng, type SampleRequest, type Sampler } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import {
  type BackendName,
  createGrpoTrainer,
  createLlamaModel,
  selectBackend,
} from '../src/index.js';

const STEPS = Number(process.env.BENCH_STEPS ?? 6);
const LATENCIES = (process.env.LATENCY_MS ?? '500,2000').split(',').map(Number);
const BACKEND = (process.env.BENCH_BACKEND ?? 'wasm') as BackendName;
const TOKENS = 16;
const VOCAB = 64;

const config = parseLlamaConfig({
  hidden_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  intermediate_size: 176,
  vocab_size: VOCAB,
  max_position_embeddings: 64,
  tie_word_embeddings: true,
});

/**
 * Random completions after a fixed delay; the same request gives the same tokens. `serial`: one
 * server that answers one request at a time (else a fleet that answers them in parallel).
 */
function slowSampler(latencyMs: number, serial: boolean): Sampler {
  let queue: Promise<unknown> = Promise.resolve();
  const wait = () => new Promise((resolve) => setTimeout(resolve, latencyMs));
  return {
    specificationVersion: 'v1',
    modelId: 'slow-fake',
    async sample(request: SampleRequest): Promise<Completion[][]> {
      if (serial) {
        queue = queue.then(wait);
        await queue;
      } else {
        await wait();
      }
      const rng = createRng(request.seed ?? 0);
      return request.prompts.map(() =>
        Array.from({ length: request.n }, () => {
          const tokenIds = Array.from({ length: TOKENS }, () => 1 + Math.floor(rng.next() * 60));
          return {
            text: tokenIds.map((id) => String.fromCharCode(48 + (id % 10))).join(''),
            tokenIds,
            logprobs: tokenIds.map(() => -Math.log(VOCAB)),
            promptTokenIds: [1, 2, 3, 4],
            finishReason: 'length' as const,
          };
        }),
      );
    },
    async updateWeights() {},
  };
}

async function run(latencyMs: number, maxStaleness: number, serial: boolean) {
  const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1, std: 0.02 }));
  const grpo = await createGrpoTrainer({
    model,
    sampler: slowSampler(latencyMs, serial),
    dataset: Array.from({ length: 64 }, (_, i) => ({ id: String(i), prompt: `p${i}` })),
    rewards: [{ name: 'sevens', fn: ({ completion }) => completion.split('7').length - 1 }],
    config: {
      maxSteps: STEPS,
      promptsPerStep: 4,
      groupSize: 8,
      maxNewTokens: TOKENS,
      quiet: true,
      mismatch: { mode: 'token-truncate', cap: 2 },
      ...(maxStaleness > 0 ? { maxStaleness } : {}),
    },
  });
  const steps: number[] = [];
  const train: number[] = [];
  const started = performance.now();
  while (grpo.completedSteps < STEPS) {
    const record = await grpo.step();
    steps.push(record.metrics['time/step_ms']!);
    train.push(record.metrics['time/logprob_ms']! + record.metrics['time/train_ms']!);
  }
  const wall = performance.now() - started;
  grpo.dispose();
  model.dispose();
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  // The first step waits for its own request in both modes: report steps 2.. (steady state).
  return { step: mean(steps.slice(1)), update: mean(train.slice(1)), wall };
}

async function main() {
  await selectBackend({ candidates: [BACKEND] });
  console.log(`backend ${BACKEND}, ${STEPS} steps, 4 prompts × 8 samples × ${TOKENS} tokens`);
  console.log(
    '| sampler | latency ms | maxStaleness | step ms (steady) | update ms | total s | speed-up |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const serial of [true, false]) {
    for (const latency of LATENCIES) {
      let base = 0;
      for (const k of [0, 1, 2]) {
        const result = await run(latency, k, serial);
        if (k === 0) base = result.wall;
        console.log(
          `| ${serial ? 'one server' : 'parallel fleet'} | ${latency} | ${k} | ${result.step.toFixed(0)} | ${result.update.toFixed(0)} | ${(result.wall / 1000).toFixed(1)} | ${(base / result.wall).toFixed(2)}× |`,
        );
      }
    }
  }
}

await main();
