/**
 * Rollout throughput beside transformers.js and llama.cpp, on the same random weights:
 * `npx tsx bench/rollout.bench.ts [--sizes 5M,58M] [--repeats 3] [--peer-repeats 3] [--ghz N]
 * [--peers transformers.js,llama.cpp]`
 * (from packages/rollout).
 *
 * G = 64 samples of one 32-token prompt, 128 new tokens (EOS ignored), temperature 0.8.
 * - transformers.js 4.3 on the exported ONNX folder (it ignores `top_p` and
 *   `num_return_sequences` when sampling, so it gets 64 rows of the prompt, top-p 1);
 * - llama.cpp through node-llama-cpp 3.21.1 (the dev dependency of @rlvr/model, resolved from its
 *   folder): F32 GGUF weights, F32 KV cache, `topK: 0, topP: 1`, 64 parallel sequences of one
 *   context, 2 threads;
 * - @rlvr/rollout's `loop` engine at top-p 1 and exact top-p 0.9 (2 workers × 1 thread, and
 *   in-process × 2 threads at top-p 1), with the weights built into the graph (pre-packed by ONNX
 *   Runtime: `weightSync` `'auto'` before its first update, or `'rebuild'`) and as graph inputs
 *   (`weightSync: 'inputs'`, and `'auto'` after its first update); plus new weights → first token
 *   for each `weightSync`.
 *
 * Every row is the median of its repeats, run alternately (peer, ours, …) in one process; the
 * load average is printed with the table. The machine may be shared: compare rows of one run.
 * % of fp32 peak = model matmul FLOP/s ÷ (cores × 2 FMA pipes × fp32 lanes of the widest vector
 * unit in /proc/cpuinfo flags × 2 flop × GHz; GHz from --ghz, default the clock /proc/cpuinfo
 * reports — a nominal clock: pass the boost clock, e.g. `--ghz 4.1` on Zen 5, for the stricter basis).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createRng } from '@rlvr/core';
import {
  buildCharTokenizer,
  type Checkpoint,
  countParameters,
  createRandomCheckpoint,
  exportGguf,
  GraphBuilder,
  type LlamaConfig,
  OnnxDataType,
  parseLlamaConfig,
  saveCheckpoint,
  valueInfo,
  writeOnnxModel,
} from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '../src/index.js';
import { loadOrt } from '../src/onnx/ort.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '5M,58M' },
    repeats: { type: 'string', default: '3' },
    'peer-repeats': { type: 'string', default: '3' },
    ghz: { type: 'string' },
    peers: { type: 'string', default: 'transformers.js,llama.cpp' },
  },
});
const PROMPT = 32;
const NEW = 128;
const G = 64;
const TEMPERATURE = 0.8;
const REPEATS = Number(args.repeats);
const PEER_REPEATS = Number(args['peer-repeats']);

const CONFIGS: Record<string, Record<string, unknown>> = {
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

/** fp32 FMA peak of this machine in GFLOP/s, and how it was computed. */
function fp32Peak(): { gflops: number; how: string } {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const lanes = /\bavx512f\b/.test(info) ? 16 : /\bavx2\b/.test(info) ? 8 : 4;
  const unit = lanes === 16 ? 'AVX-512' : lanes === 8 ? 'AVX2' : 'SSE';
  const cores = cpus().length;
  const nominal = /cpu MHz\s*:\s*([\d.]+)/.exec(info)?.[1];
  const ghz = args.ghz !== undefined ? Number(args.ghz) : Number(nominal ?? 0) / 1000 || 3;
  const gflops = cores * 2 * lanes * 2 * ghz;
  return {
    gflops,
    how: `${cores} cores × 2 FMA pipes × ${lanes} fp32 lanes (${unit}, from /proc/cpuinfo flags) × 2 flop × ${ghz} GHz (--ghz; /proc/cpuinfo says ${nominal ?? '?'} MHz) = ${gflops.toFixed(0)} GFLOP/s`,
  };
}

/** Matmul FLOPs of generating NEW tokens after a PROMPT-token prompt, per sequence (2 per MAC). */
function flopsPerSequence(config: LlamaConfig): number {
  const h = config.hidden_size;
  const kv = config.num_key_value_heads * config.head_dim;
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return (performance.now() - started) / 1000;
}

/** transformers.js on the exported folder: a generate() of G rows of the prompt. */
async function openTransformersJs(root: string, name: string, prompt: number[]) {
  const { AutoModelForCausalLM, Tensor, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.localModelPath = root;
  const model = await AutoModelForCausalLM.from_pretrained(name, {
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
  const generate = (tokens: number, sample: boolean) =>
    model.generate({
      input_ids: input,
      attention_mask: mask,
      do_sample: sample,
      temperature: TEMPERATURE,
      top_k: 0,
      max_new_tokens: tokens,
      min_new_tokens: tokens,
    } as never);
  await generate(2, false);
  return { run: () => generate(NEW, true), dispose: () => model.dispose() };
}

/** The part of node-llama-cpp 3.21 this bench drives (it is not a dependency of this package). */
type LlamaCppSequence = {
  evaluate(
    tokens: number[],
    options: { temperature: number; topK: number; topP: number },
  ): AsyncGenerator<number>;
  dispose(): void;
};
type LlamaCppModule = {
  LlamaLogLevel: { error: unknown };
  getLlama(options: object): Promise<{
    loadModel(options: { modelPath: string; gpuLayers: number }): Promise<{
      createContext(options: object): Promise<{
        getSequence(): LlamaCppSequence;
        dispose(): Promise<void>;
      }>;
      dispose(): Promise<void>;
    }>;
  }>;
};

/** llama.cpp (node-llama-cpp from @rlvr/model's dev dependencies): G parallel sequences. */
async function openLlamaCpp(path: string, prompt: number[]) {
  const require = createRequire(new URL('../../model/package.json', import.meta.url));
  const { getLlama, LlamaLogLevel } = (await import(
    pathToFileURL(require.resolve('node-llama-cpp')).href
  )) as LlamaCppModule;
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    logLevel: LlamaLogLevel.error,
  });
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  const context = await model.createContext({
    sequences: G,
    contextSize: PROMPT + NEW + 32,
    threads: 2,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  const options = { temperature: TEMPERATURE, topK: 0, topP: 1 };
  const generate = (count: number) =>
    Promise.all(
      Array.from({ length: G }, async () => {
        const sequence = context.getSequence();
        let produced = 0;
        for await (const _ of sequence.evaluate(prompt, options)) {
          if (++produced >= count) break;
        }
        sequence.dispose();
      }),
    );
  await generate(2);
  return {
    run: () => generate(NEW),
    dispose: async () => {
      await context.dispose();
      await model.dispose();
    },
  };
}

type Row = { label: string; setting: string; times: number[] };

/** Builds the models of one size in a temporary folder and measures every row alternately. */
async function benchSize(name: string, peak: number) {
  const config = parseLlamaConfig({
    model_type: 'llama',
    max_position_embeddings: 512,
    ...CONFIGS[name],
  });
  const tokenizer = buildCharTokenizer({ characters: 'abcdefghijklmnopqrstuvwxyz' });
  const checkpoint: Checkpoint = {
    ...createRandomCheckpoint(config, { seed: 1, std: 0.05 }),
    tokenizer,
  };
  const rng = createRng(7);
  const prompt = Array.from({ length: PROMPT }, () => 4 + rng.nextInt(config.vocab_size - 4));
  const root = await mkdtemp(join(tmpdir(), 'rlvr-bench-'));
  const folder = `model-${name}`;
  await saveCheckpoint(join(root, folder), checkpoint);
  await writeOnnxModel(join(root, folder), checkpoint);
  const ggufPath = join(root, 'model.gguf');
  await writeFile(ggufPath, exportGguf(checkpoint, { dtype: 'f32' }));

  const rows: Row[] = [];
  const tasks: { row: Row; run: () => Promise<unknown>; repeats: number }[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  const add = (label: string, setting: string, run: () => Promise<unknown>, repeats: number) => {
    const row = { label, setting, times: [] };
    rows.push(row);
    tasks.push({ row, run, repeats });
  };
  const peers = args.peers!.split(',');
  try {
    if (!peers.includes('transformers.js')) throw new Error('left out (--peers)');
    const tjs = await openTransformersJs(root, folder, prompt);
    closers.push(tjs.dispose);
    add('transformers.js 4.3', 'top-p 1 (64 rows)', tjs.run, PEER_REPEATS);
  } catch (error) {
    console.error(`transformers.js failed on ${name}: ${String(error)}`);
  }
  try {
    if (!peers.includes('llama.cpp')) throw new Error('left out (--peers)');
    const cpp = await openLlamaCpp(ggufPath, prompt);
    closers.push(cpp.dispose);
    add('llama.cpp (node-llama-cpp 3.21.1)', 'F32, 64 sequences, 2 threads', cpp.run, PEER_REPEATS);
  } catch (error) {
    console.error(`llama.cpp failed on ${name}: ${String(error)}`);
  }
  const samplers: Record<string, OnnxSampler> = {};
  for (const [key, workers, threads, weightSync] of [
    ['2w', 2, 1, 'auto'],
    ['2w-inputs', 2, 1, 'inputs'],
    ['0w', 0, 2, 'auto'],
  ] as const) {
    const sampler = await createOnnxSampler({
      checkpoint,
      engine: 'loop',
      workers,
      threads,
      eosTokenIds: [],
      weightSync,
    });
    await sampler.sample({ prompts: [prompt], n: 2, maxNewTokens: 2, seed: 0 });
    samplers[key] = sampler;
    closers.push(() => sampler.close());
  }
  let seed = 1;
  const ours = (sampler: OnnxSampler, topP: number) => () =>
    sampler.sample({
      prompts: [prompt],
      n: G,
      maxNewTokens: NEW,
      temperature: TEMPERATURE,
      topP,
      seed: seed++,
    });
  const builtIn = 'weights built in';
  const inputs = 'weights as inputs';
  for (const [key, weights] of [
    ['2w', builtIn],
    ['2w-inputs', inputs],
  ] as const) {
    add(
      '@rlvr/rollout loop',
      `2 workers × 1 thread, top-p 1, ${weights}`,
      ours(samplers[key]!, 1),
      REPEATS,
    );
    add(
      '@rlvr/rollout loop',
      `2 workers × 1 thread, exact top-p 0.9, ${weights}`,
      ours(samplers[key]!, 0.9),
      REPEATS,
    );
  }
  add(
    '@rlvr/rollout loop',
    `in-process × 2 threads, top-p 1, ${builtIn}`,
    ours(samplers['0w']!, 1),
    REPEATS,
  );

  for (let repeat = 0; repeat < Math.max(REPEATS, PEER_REPEATS); repeat++) {
    for (const task of tasks) {
      if (repeat >= task.repeats) continue;
      const time = await seconds(task.run);
      task.row.times.push(time);
      console.error(`${name} ${task.row.label} ${task.row.setting}: ${time.toFixed(2)} s`);
    }
  }
  for (const close of closers) await close();
  // one sampler at a time (each holds a copy of the weights per worker)
  const sync: string[] = [];
  for (const weightSync of ['inputs', 'auto', 'rebuild'] as const) {
    const sampler = await createOnnxSampler({
      checkpoint,
      engine: 'loop',
      workers: 2,
      threads: 1,
      eosTokenIds: [],
      weightSync,
    });
    try {
      await sampler.sample({ prompts: [prompt], n: 2, maxNewTokens: 2, seed: 0 });
      // 'auto': the first update opens the graph with weight inputs, later ones copy in place
      const first =
        weightSync === 'auto' ? await syncOnce(config, sampler, prompt, 100) : undefined;
      sync.push(
        `weightSync '${weightSync}': ${first ? `first update ${describeSync(first)}; then ` : ''}${describeSync(await medianSync(config, sampler, prompt))}`,
      );
    } finally {
      await sampler.close();
    }
  }
  await rm(root, { recursive: true, force: true });

  const flops = flopsPerSequence(config) * G;
  const baseline = rows[0]?.label.startsWith('transformers') ? median(rows[0].times) : undefined;
  return {
    name,
    params: countParameters(config),
    sync,
    rows: rows.map((row) => {
      const time = median(row.times);
      const gflops = flops / time / 1e9;
      return [
        name,
        row.label,
        row.setting,
        `${row.times.length}`,
        ((G * NEW) / time).toFixed(0),
        baseline ? `${(baseline / time).toFixed(2)}×` : '',
        gflops.toFixed(1),
        `${((100 * gflops) / peak).toFixed(1)}%`,
      ];
    }),
  };
}

type SyncSample = {
  total: number;
  update: number;
  first: number;
  copy: number;
  workers: number;
  mode: string;
};

/** One update with new random weights (`seed`), then the first token. */
async function syncOnce(
  config: LlamaConfig,
  sampler: OnnxSampler,
  prompt: number[],
  seed: number,
): Promise<SyncSample> {
  const next = createRandomCheckpoint(config, { seed, std: 0.05 });
  const started = performance.now();
  await sampler.updateWeights({ step: seed, tensors: next.tensors });
  const updated = performance.now();
  await sampler.sample({ prompts: [prompt], n: 1, maxNewTokens: 1, seed: 0 });
  const done = performance.now();
  const timing = sampler.lastWeightSync!;
  return {
    total: done - started,
    update: updated - started,
    first: done - updated,
    copy: timing.exportMs,
    workers: timing.sessionMs,
    mode: timing.mode,
  };
}

/** New weights → first token on a 2-worker sampler, median of REPEATS. */
async function medianSync(config: LlamaConfig, sampler: OnnxSampler, prompt: number[]) {
  const samples: SyncSample[] = [];
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    samples.push(await syncOnce(config, sampler, prompt, 2 + repeat));
  }
  samples.sort((a, b) => a.total - b.total);
  return samples[samples.length >> 1]!;
}

function describeSync(sample: SyncSample): string {
  const [copy, workers] =
    sample.mode === 'in-place'
      ? ['copy into the shared buffer', "workers' copies"]
      : ['merge + encode the graph', 'new sessions'];
  return `${Math.round(sample.total)} ms (${sample.mode}: update ${Math.round(sample.update)} ms = ${copy} ${Math.round(sample.copy)} ms + ${workers} ${Math.round(sample.workers)} ms; first token ${Math.round(sample.first)} ms)`;
}

/**
 * What ONNX Runtime's matrix product reaches on this machine: one `MatMul` of two 1024 × 1024
 * inputs on all cores, median of 7 runs (the attainable ceiling next to the formula's peak).
 */
async function measuredGemm(): Promise<number> {
  const ort = await loadOrt();
  const n = 1024;
  const g = new GraphBuilder();
  g.add('MatMul', ['a', 'b'], {}, ['c']);
  const bytes = g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'bench',
    graph: {
      name: 'gemm',
      input: [
        valueInfo('a', OnnxDataType.FLOAT, [n, n]),
        valueInfo('b', OnnxDataType.FLOAT, [n, n]),
      ],
      output: [valueInfo('c', OnnxDataType.FLOAT, [n, n])],
    },
  });
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: cpus().length });
  const data = new Float32Array(n * n).map((_, index) => ((index * 7919) % 1000) / 1000);
  const feeds = {
    a: new ort.Tensor('float32', data, [n, n]),
    b: new ort.Tensor('float32', data, [n, n]),
  };
  const times: number[] = [];
  for (let run = 0; run < 9; run++) {
    const start = performance.now();
    await session.run(feeds);
    if (run >= 2) times.push(performance.now() - start);
  }
  await session.release();
  return (2 * n ** 3) / (median(times) / 1000) / 1e9;
}

const peak = fp32Peak();
const gemm = await measuredGemm();
const results = [];
for (const name of args.sizes!.split(',')) results.push(await benchSize(name, peak.gflops));
const header = [
  'model',
  'engine',
  'setting',
  'runs',
  'tokens/s',
  'vs transformers.js',
  'GFLOP/s',
  '% fp32 peak',
];
const table = [header, ...results.flatMap((result) => result.rows)];
const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
const line = (cells: string[]) =>
  `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
console.log(
  `\nG = ${G} samples of one ${PROMPT}-token prompt, ${NEW} new tokens, temperature ${TEMPERATURE}, random weights`,
);
console.log(
  `fp32 peak: ${peak.how}; measured ceiling: onnxruntime MatMul 1024³ on ${cpus().length} threads ${gemm.toFixed(0)} GFLOP/s (${((100 * gemm) / peak.gflops).toFixed(0)}% of that peak, before the rows); load average at the end: ${loadavg()
    .map((value) => value.toFixed(2))
    .join(', ')}\n`,
);
console.log(line(header));
console.log(line(widths.map((width) => '-'.repeat(width))));
for (const row of table.slice(1)) console.log(line(row));
console.log('\nNew weights → first token (loop engine, 2 workers; median of the repeats):');
for (const result of results) {
  console.log(`- ${result.name} (${(result.params / 1e6).toFixed(1)}M params):`);
  for (const line of result.sync) console.log(`  - ${line}`);
}
