/**
 * Issue #14's route 2b standalone: the one-graph train step (`src/backend/ort-train-step.ts`:
 * forward, cross-entropy, the hand-written backward, clipping, AdamW) driven from JS on Hugging
 * Face layout tensors, for the trainer bench's Llama configs and batch (16 × 128, the 0.8M and 5M
 * configs, lr 1e-4 constant, `maxGradNorm` 1, PyTorch's AdamW defaults). Weights and Adam moments
 * are graph inputs; the step returns their new values, which feed the next step.
 *
 * It first checks parity: 3 steps from the same random checkpoint on the same batch against the
 * trainer's own `sftStep` (what `selectBackend()` picks), losses side by side; then it times both
 * (and the PyTorch peer when `python3-torch` is installed), alternating, `BENCH_ROUNDS` rounds ×
 * `BENCH_STEPS` steps, medians.
 *
 * Run: `npx tsx bench/ort-train-step.bench.ts` (from packages/trainer). Env: BENCH_ROUNDS (3),
 * BENCH_STEPS (3), ORT_THREADS (2), CONFIGS (`0.8M,5M`).
 */
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import * as ort from 'onnxruntime-node';
import { createOrtTrainStep } from '../src/backend/ort-train-step.js';
import { createLlamaModel, createPolicyTrainer, selectBackend } from '../src/index.js';
import { BENCH_CONFIGS } from './configs.js';
import { BATCH, benchBatch, SEQ, torchAvailable, torchRound } from './torch-peer.js';

const LR = 1e-4;
const BETA1 = 0.9;
const BETA2 = 0.999;
const EPS = 1e-8;
const MAX_NORM = 1;
const STEPS = Number(process.env.BENCH_STEPS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const THREADS = Number(process.env.ORT_THREADS ?? 2);
const CHOSEN = (process.env.CONFIGS ?? '0.8M,5M').split(',');

const withTorch = torchAvailable();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const selected = await selectBackend();
console.log(
  `tfjs trainer: ${selected.name}, matMul ${selected.matMul}; onnxruntime ${THREADS} threads`,
);
for (const name of CHOSEN) {
  const spec = BENCH_CONFIGS[name]!;
  const config = parseLlamaConfig({ ...spec, max_position_embeddings: 256 });
  const checkpoint = createRandomCheckpoint(config, { seed: 1 });
  const tensors = new Map(checkpoint.tensors.map((t) => [t.name, t.data]));
  const sequences = benchBatch(2, spec.vocab_size);
  const model = await createLlamaModel(checkpoint);
  const trainer = await createPolicyTrainer(model, { schedule: { learningRate: LR } });
  const onnx = await createOrtTrainStep(
    ort,
    spec,
    {
      linearLayout: 'hf',
      ropeTheta: config.rope_theta,
      rmsNormEps: config.rms_norm_eps,
      beta1: BETA1,
      beta2: BETA2,
      epsilon: EPS,
      maxGradNorm: MAX_NORM,
      learningRate: LR,
      weightDecay: 0,
      threads: THREADS,
      maxLength: config.max_position_embeddings,
    },
    tensors,
  );
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let step = 0; step < 3; step++) {
    theirs.push(trainer.sftStep(sequences).loss);
    ours.push((await onnx.step(sequences)).loss);
  }
  const worst = Math.max(...ours.map((loss, i) => Math.abs(loss - theirs[i]!)));
  console.log(
    `${name} parity, 3 steps on one batch: loss sftStep ${theirs.map((l) => l.toFixed(6)).join(' → ')}, onnx graph ${ours.map((l) => l.toFixed(6)).join(' → ')} (max |Δ| ${worst.toExponential(2)})`,
  );
  const tokens = BATCH * SEQ * STEPS;
  const rates: Record<string, number[]> = { tfjs: [], graph: [], torch: [] };
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    for (let step = 0; step < STEPS; step++) trainer.sftStep(sequences);
    rates.tfjs!.push(tokens / ((performance.now() - start) / 1000));
    start = performance.now();
    for (let step = 0; step < STEPS; step++) await onnx.step(sequences);
    rates.graph!.push(tokens / ((performance.now() - start) / 1000));
    if (withTorch) rates.torch!.push(torchRound(spec, STEPS, THREADS));
  }
  const torch = rates.torch!.length > 0 ? median(rates.torch!) : undefined;
  const line = (label: string, rate: number) =>
    `  ${label}: ${Math.round(rate)} tok/s${torch === undefined ? '' : ` (${(rate / torch).toFixed(2)}× PyTorch)`}`;
  console.log(`${name}, ${BATCH}×${SEQ}, medians of ${ROUNDS} rounds × ${STEPS} steps:`);
  console.log(line('@rlvr/trainer sftStep (default engine)', median(rates.tfjs!)));
  console.log(line('the train-step graph driven from JS (hf layout)', median(rates.graph!)));
  if (torch !== undefined)
    console.log(`  PyTorch 1.13 + OpenBLAS, ${THREADS} threads: ${Math.round(torch)} tok/s`);
  await onnx.release();
  trainer.dispose();
  model.dispose();
}
