/**
 * Training throughput (forward + backward + AdamW) of @rlvr/trainer at batch 16 × 128 for the 0.8M
 * and 5M configs of issue #14, side by side with the same architecture in PyTorch (CPU, OpenBLAS
 * when installed) when `/usr/bin/python3 -c "import torch"` works: ours and the peer alternate,
 * `BENCH_ROUNDS` rounds of `BENCH_STEPS` steps each, and the table shows medians and the ratio.
 *
 * Run: `pnpm --filter @rlvr/trainer bench` (or `npx tsx bench/trainer.bench.ts` in this folder).
 * Env: BENCH_STEPS (default 3), BENCH_ROUNDS (default 3), BENCH_VARIANTS (default "default";
 * comma-separated from "default" = what `selectBackend()` picks, "matmul-only" = wasm with
 * onnxruntime matMul but without the fused onnxruntime attention, "wasm-xnnpack" = wasm with
 * `matMul: 'backend'`, "cpu"), TORCH_THREADS (default 2: both cores), BENCH_STEP (default "sft":
 * `sftStep`; "grpo": `grpoStep` with a reference model, β 0.04, clipping 0.2 / 0.28, token mean,
 * one random advantage per sequence, against TRL's GRPO loss in the peer; "logits": `logitsStep`
 * with the cross-entropy written as a loss on the logits, no peer), BENCH_MODEL_TYPE
 * (default "llama"; "qwen2": the same sizes with Qwen2's q/k/v biases, random, and no PyTorch peer,
 * whose model has no biases).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { ORT_FUSED_KERNELS } from '../src/backend/ort-kernels.js';
import { ORT_TRAIN_STEP } from '../src/backend/ort-train-step-kernel.js';
import {
  createLlamaModel,
  createPolicyTrainer,
  type LogitsLossFunction,
  type PolicyTrainer,
  type SelectBackendOptions,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';
import { BENCH_CONFIGS, type BenchConfig } from './configs.js';
import { BATCH, benchBatch, OPENBLAS, SEQ, torchAvailable, torchRound } from './torch-peer.js';

const STEPS = Number(process.env.BENCH_STEPS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TORCH_THREADS = Number(process.env.TORCH_THREADS ?? 2);
const VARIANTS: Record<string, SelectBackendOptions> = {
  default: {},
  // the default without the one-graph train step: matMul and fused attention on onnxruntime
  'no-train-step': { candidates: ['wasm'], matMul: 'onnxruntime' },
  // wasm + onnxruntime matMul without this package's fused onnxruntime kernels (attention, step).
  'matmul-only': { candidates: ['wasm'], matMul: 'onnxruntime' },
  'wasm-xnnpack': { candidates: ['wasm'], matMul: 'backend' },
  cpu: { candidates: ['cpu'] },
};
const CHOSEN = (process.env.BENCH_VARIANTS ?? 'default').split(',');
const STEP_KIND =
  process.env.BENCH_STEP === 'grpo'
    ? 'grpo'
    : process.env.BENCH_STEP === 'logits'
      ? 'logits'
      : 'sft';
const GRPO = {
  beta: 0.04,
  epsilonLow: 0.2,
  epsilonHigh: 0.28,
  lossAggregation: 'token-mean',
} as const;

type Spec = BenchConfig;

/**
 * `logitsStep`'s loss in the bench: the cross-entropy written on the logits (d logits =
 * (softmax − onehot) / tokens), so its math is `sftStep`'s and the time is the logits route's.
 */
const crossEntropyOnLogits: LogitsLossFunction = (rows, { totalTokens }) => {
  let loss = 0;
  const dLogits = rows.map((row) => {
    let max = -Infinity;
    for (const value of row.logits) max = Math.max(max, value);
    let sum = 0;
    const out = new Float64Array(row.logits.length);
    for (let v = 0; v < out.length; v++) sum += out[v] = Math.exp(row.logits[v]! - max);
    loss -= (row.logits[row.target]! - max - Math.log(sum)) / totalTokens;
    for (let v = 0; v < out.length; v++)
      out[v] = (out[v]! / sum - (v === row.target ? 1 : 0)) / totalTokens;
    return out;
  });
  return { loss, dLogits };
};

/** One step of the benched kind (`BENCH_STEP`). */
function trainStep(trainer: PolicyTrainer, sequences: TokenSequence[]): void {
  if (STEP_KIND === 'sft') {
    trainer.sftStep(sequences);
    return;
  }
  if (STEP_KIND === 'logits') {
    trainer.logitsStep(sequences, crossEntropyOnLogits);
    return;
  }
  const rng = createRng(3);
  const advantages = sequences.map(() => 2 * rng.next() - 1);
  trainer.grpoStep({ sequences, advantages });
}
const CONFIGS = BENCH_CONFIGS;

/** Training FLOPs per token: 6 × (matrix params incl. head) + attention (fwd 4·T·d per layer, ×3). */
function flopsPerToken(spec: Spec): number {
  const d = spec.hidden_size;
  const kv = (d / spec.num_attention_heads) * spec.num_key_value_heads;
  const perLayer = 2 * d * d + 2 * d * kv + 3 * d * spec.intermediate_size;
  const matrixParams = spec.num_hidden_layers * perLayer + d * spec.vocab_size;
  return 6 * matrixParams + 3 * spec.num_hidden_layers * 4 * SEQ * d;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const QWEN2 = process.env.BENCH_MODEL_TYPE === 'qwen2';
const torch = !QWEN2 && STEP_KIND !== 'logits' && torchAvailable();
const table: string[] = [];
const load = () =>
  (execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0] ?? '?').trim();
console.log(`load average at start: ${load()}; step: ${STEP_KIND}`);
for (const [name, spec] of Object.entries(CONFIGS)) {
  const config = parseLlamaConfig({
    ...spec,
    max_position_embeddings: 256,
    ...(QWEN2 ? { model_type: 'qwen2' } : {}),
  });
  const flops = flopsPerToken(spec);
  const ours = new Map<string, number[]>();
  const trainers = [];
  for (const variant of CHOSEN) {
    if (variant === 'cpu' && name !== '0.8M') continue; // pure JS: ~1 GFLOP/s, one config is enough
    const selected = await selectBackend(VARIANTS[variant]);
    const leftOut =
      variant === 'matmul-only'
        ? ORT_FUSED_KERNELS
        : variant === 'no-train-step'
          ? [ORT_TRAIN_STEP]
          : [];
    const saved = leftOut.map((kernel) => tf.getKernel(kernel, 'wasm')!);
    for (const kernel of leftOut) tf.unregisterKernel(kernel, 'wasm');
    const model = await createLlamaModel(
      createRandomCheckpoint(config, { seed: 1, ...(QWEN2 ? { perturbStd: 0.02 } : {}) }),
    );
    for (const kernel of saved) tf.registerKernel(kernel);
    const trainer = await createPolicyTrainer(model, {
      schedule: { learningRate: 1e-4 },
      ...(STEP_KIND === 'grpo' ? { grpo: GRPO } : {}),
    });
    const label = `${variant} (${selected.name}, matMul ${selected.matMul})`;
    trainStep(trainer, benchBatch(2, spec.vocab_size)); // warm-up (sessions, kernels)
    trainers.push({ label, trainer, model, steps: variant === 'cpu' ? 1 : STEPS });
    ours.set(label, []);
  }
  const peer: number[] = [];
  const sequences = benchBatch(2, spec.vocab_size);
  for (let round = 0; round < ROUNDS; round++) {
    for (const { label, trainer, steps } of trainers) {
      const start = performance.now();
      for (let step = 0; step < steps; step++) trainStep(trainer, sequences);
      ours.get(label)!.push((BATCH * SEQ * steps) / ((performance.now() - start) / 1000));
    }
    if (torch) peer.push(torchRound(spec, STEPS, TORCH_THREADS, STEP_KIND));
  }
  for (const { trainer, model } of trainers) {
    trainer.dispose();
    model.dispose();
  }
  const peerRate = torch ? median(peer) : Number.NaN;
  const gflops = (rate: number) => ((rate * flops) / 1e9).toFixed(1);
  for (const [label, rates] of ours) {
    const rate = median(rates);
    const ratio = torch ? `${(rate / peerRate).toFixed(2)}×` : 'n/a';
    table.push(
      `| ${name} | ${label} | ${rate.toFixed(0)} (${gflops(rate)} GFLOP/s) | ${torch ? `${peerRate.toFixed(0)} (${gflops(peerRate)} GFLOP/s)` : 'n/a'} | ${ratio} |`,
    );
    console.log(
      `${name} ${label}: ${rates.map((r) => r.toFixed(0)).join(', ')} tok/s; PyTorch: ${peer.map((r) => r.toFixed(0)).join(', ')}`,
    );
  }
}
const peerName = `PyTorch + ${existsSync(OPENBLAS) ? 'OpenBLAS' : 'default BLAS'}, ${TORCH_THREADS} thread(s)`;
console.log(
  `\nmedians of ${ROUNDS} alternating rounds × ${STEPS} steps, load average now ${load()}`,
);
console.log(`| config | @rlvr/trainer tok/s | ${peerName} tok/s | ratio |`);
console.log('|---|---|---|---|');
for (const row of table) console.log(row.replace(/^\| (\S+) \| (.+?) \| /, '| $1, $2 | '));
if (QWEN2) {
  console.log(
    'PyTorch side-by-side skipped: BENCH_MODEL_TYPE=qwen2 (its peer model has no biases).',
  );
} else if (STEP_KIND === 'logits') {
  console.log('PyTorch side-by-side skipped: BENCH_STEP=logits (no logits-loss mode in the peer).');
} else if (!torch) {
  console.log(
    'PyTorch side-by-side skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch libopenblas0-openmp).',
  );
}
