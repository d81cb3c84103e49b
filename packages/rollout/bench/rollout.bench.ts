/**
 * Rollout throughput, side by side with transformers.js on the same exported ONNX folder:
 * `pnpm --filter @rlvr/rollout bench` (BENCH_MODELS=0.8M,5M,58M to choose; default all three).
 *
 * Prompt 32 tokens, 128 new tokens (EOS ignored), temperature 0.8, G = 64 sequences of one prompt.
 * transformers.js ignores top_p and num_return_sequences when sampling, so it gets 64 identical
 * rows and top-p 1; our rows are reported at top-p 1 (comparable) and top-p 0.9 (exact nucleus),
 * for the `optimum` engine (one session.run per token) and the `loop` engine (in-graph sampling,
 * 16 tokens per session.run). Each of our timings is the median of BENCH_REPEATS runs (default 3;
 * transformers.js runs once). The machine is shared and noisy: compare rows of one run, not runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng } from '@rlvr/core';
import {
  type Checkpoint,
  countParameters,
  createRandomCheckpoint,
  type LlamaConfig,
  parseLlamaConfig,
  saveCheckpoint,
  writeOnnxModel,
} from '@rlvr/model';
import { createOnnxSampler } from '../src/index.js';

const PROMPT = 32;
const NEW = 128;
const G = Number(process.env.BENCH_G ?? 64);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
const PEAK_GFLOPS = 528; // fp32 FMA peak of the 2 vCPUs (2 × 2 × 8 lanes × 2 × ~4.1 GHz)

const CONFIGS: Record<string, Record<string, unknown>> = {
  '0.8M': {
    vocab_size: 64,
    hidden_size: 128,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 384,
  },
  '5M': {
    vocab_size: 1024,
    hidden_size: 256,
    num_hidden_layers: 6,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    intermediate_size: 688,
  },
  '58M': {
    vocab_size: 32000,
    hidden_size: 512,
    num_hidden_layers: 8,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    intermediate_size: 1408,
  },
};

/** Matmul FLOPs of generating NEW tokens after a PROMPT-token prompt, per sequence (2 per MAC). */
function flopsPerSequence(config: LlamaConfig): number {
  const h = config.hidden_size;
  const headDim = h / config.num_attention_heads;
  const kv = config.num_key_value_heads * headDim;
  const perToken =
    config.num_hidden_layers * (2 * h * h + 2 * h * kv + 3 * h * config.intermediate_size) +
    h * config.vocab_size;
  let flops = 0;
  for (let step = 0; step < NEW; step++) {
    const context = PROMPT + step + 1;
    flops += 2 * perToken + config.num_hidden_layers * 4 * context * h;
  }
  return flops;
}

async function timeIt<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await fn();
  return [result, (performance.now() - started) / 1000];
}

async function transformersJs(dir: string, prompt: number[], temperature: number): Promise<number> {
  const { AutoModelForCausalLM, Tensor, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = dirname(dir);
  const model = await AutoModelForCausalLM.from_pretrained(basename(dir), {
    dtype: 'fp32',
    local_files_only: true,
    device: 'cpu',
  });
  const ids = new BigInt64Array(G * PROMPT);
  for (let row = 0; row < G; row++)
    prompt.forEach((token, index) => {
      ids[row * PROMPT + index] = BigInt(token);
    });
  const input = new Tensor('int64', ids, [G, PROMPT]);
  const mask = new Tensor('int64', new BigInt64Array(G * PROMPT).fill(1n), [G, PROMPT]);
  const run = () =>
    model.generate({
      input_ids: input,
      attention_mask: mask,
      do_sample: true,
      temperature,
      top_k: 0,
      max_new_tokens: NEW,
      min_new_tokens: NEW,
    } as never);
  await model.generate({
    input_ids: input,
    attention_mask: mask,
    max_new_tokens: 2,
    min_new_tokens: 2,
  } as never);
  const [, seconds] = await timeIt(run);
  await model.dispose();
  return seconds;
}

function dirname(path: string): string {
  return path.slice(0, path.lastIndexOf('/'));
}
function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

const rows: string[][] = [];
const header = [
  'model',
  'params',
  'engine',
  'setting',
  'tokens/s',
  'vs transformers.js',
  'GFLOP/s',
  '% fp32 peak',
];
const names = (process.env.BENCH_MODELS ?? '0.8M,5M,58M').split(',');
const sync: string[] = [];

for (const name of names) {
  const config = parseLlamaConfig({
    model_type: 'llama',
    max_position_embeddings: 512,
    ...CONFIGS[name],
  });
  const checkpoint: Checkpoint = createRandomCheckpoint(config, { seed: 1, std: 0.05 });
  const params = countParameters(config);
  const rng = createRng(7);
  const prompt = Array.from({ length: PROMPT }, () => 4 + rng.nextInt(config.vocab_size - 4));
  const flops = flopsPerSequence(config) * G;
  const tokens = G * NEW;
  const root = await mkdtemp(join(tmpdir(), 'rlvr-bench-'));
  const dir = join(root, `model-${name}`);
  await saveCheckpoint(dir, checkpoint);
  await writeOnnxModel(dir, checkpoint);
  const add = (engine: string, setting: string, seconds: number, baseline?: number) => {
    const gflops = flops / seconds / 1e9;
    rows.push([
      name,
      `${(params / 1e6).toFixed(1)}M`,
      engine,
      setting,
      (tokens / seconds).toFixed(0),
      baseline ? `${(baseline / seconds).toFixed(2)}×` : '1.00×',
      gflops.toFixed(1),
      `${((100 * gflops) / PEAK_GFLOPS).toFixed(1)}%`,
    ]);
    console.error(`${name} ${engine} ${setting}: ${seconds.toFixed(2)} s`);
  };
  let baseline: number | undefined;
  try {
    baseline = await transformersJs(dir, prompt, 0.8);
    add('transformers.js 4.3', 'top-p 1 (64 rows)', baseline);
  } catch (error) {
    console.error(`transformers.js failed on ${name}: ${String(error)}`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  const variants = [
    { engine: 'optimum', workers: 1, threads: 2, topPs: [1] },
    { engine: 'loop', workers: 1, threads: 2, topPs: [1, 0.9] },
    { engine: 'loop', workers: 2, threads: 1, topPs: [1, 0.9] },
  ] as const;
  for (const { engine, workers, threads, topPs } of variants) {
    const sampler = await createOnnxSampler({
      checkpoint,
      engine,
      workers,
      threads,
      eosTokenIds: [],
    });
    await sampler.sample({ prompts: [prompt], n: 2, maxNewTokens: 2, seed: 0 });
    for (const topP of topPs) {
      const times: number[] = [];
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        const [, seconds] = await timeIt(() =>
          sampler.sample({
            prompts: [prompt],
            n: G,
            maxNewTokens: NEW,
            temperature: 0.8,
            topP,
            seed: 1 + repeat,
          }),
        );
        times.push(seconds);
      }
      add(
        `@rlvr/rollout ${engine}`,
        `${workers}w×${threads}t top-p ${topP}`,
        median(times),
        baseline,
      );
    }
    if (engine === 'loop' && name !== '0.8M') {
      const syncs: number[] = [];
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        const next = createRandomCheckpoint(config, { seed: 2 + repeat, std: 0.05 });
        const [, seconds] = await timeIt(async () => {
          await sampler.updateWeights({ step: 1 + repeat, tensors: next.tensors });
          await sampler.sample({ prompts: [prompt], n: 1, maxNewTokens: 1, seed: 0 });
        });
        syncs.push(seconds);
      }
      const timing = sampler.lastWeightSync!;
      sync.push(
        `${name} ${engine} ${workers}w×${threads}t: new weights → first token ${(median(syncs) * 1000).toFixed(0)} ms (median of ${REPEATS}; last: graph ${timing.exportMs.toFixed(0)} ms, session rebuild ${timing.sessionMs.toFixed(0)} ms)`,
      );
    }
    await sampler.close();
  }
  await rm(root, { recursive: true, force: true });
}

const widths = header.map((title, column) =>
  Math.max(title.length, ...rows.map((row) => row[column]!.length)),
);
const line = (cells: string[]) =>
  `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
console.log(`\nG=${G}, prompt ${PROMPT}, ${NEW} new tokens, temperature 0.8\n`);
console.log(line(header));
console.log(line(widths.map((width) => '-'.repeat(width))));
for (const row of rows) console.log(line(row));
console.log(`\nWeight sync:\n${sync.map((item) => `- ${item}`).join('\n')}`);
