/**
 * A/B of this package's fused onnxruntime kernels on the wasm backend (onnxruntime matMul): one
 * trainer per variant, each built with some fused kernels left out (unregistered while its model
 * is created), alternating `AB_ROUNDS` rounds of `AB_STEPS` SFT steps (16 × 128 tokens, forward +
 * backward + AdamW); medians of wall-clock and of CPU-time (process user + system, all threads)
 * throughput and their ratio to the first variant, with the load average.
 *
 * Run: `npx tsx bench/fused-kernels.bench.ts` in packages/trainer. Env: AB_ROUNDS (default 5),
 * AB_STEPS (default 2), AB_CONFIGS (default "0.8M,5M"), AB_VARIANTS ("name=KernelA+KernelB" to
 * leave out, comma-separated; default "none=,all=<every fused kernel>"), AB_THREADS (matMul threads).
 */
import { execFileSync } from 'node:child_process';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { ORT_FUSED_KERNELS } from '../src/backend/ort-kernels.js';
import {
  createLlamaModel,
  createPolicyTrainer,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';
import { BENCH_CONFIGS } from './configs.js';

const ROUNDS = Number(process.env.AB_ROUNDS ?? 5);
const STEPS = Number(process.env.AB_STEPS ?? 2);
const CHOSEN = (process.env.AB_CONFIGS ?? '0.8M,5M').split(',');
const VARIANTS = (process.env.AB_VARIANTS ?? `fused=,unfused=${ORT_FUSED_KERNELS.join('+')}`)
  .split(',')
  .map((entry) => {
    const [name, left] = entry.split('=');
    return { name: name!, leftOut: left ? left.split('+') : [] };
  });
const CONFIGS = BENCH_CONFIGS;
const load = () =>
  execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const threads = process.env.AB_THREADS ? Number(process.env.AB_THREADS) : undefined;

await selectBackend({
  candidates: ['wasm'],
  matMul: 'onnxruntime',
  ...(threads ? { matMulThreads: threads } : {}),
});
console.log(`load average at start: ${load()}`);
for (const name of CHOSEN) {
  const config = parseLlamaConfig({ ...CONFIGS[name], max_position_embeddings: 256 });
  const rng = createRng(2);
  const sequences: TokenSequence[] = Array.from({ length: 16 }, () => ({
    promptIds: [Math.floor(rng.next() * config.vocab_size)],
    completionIds: Array.from({ length: 128 }, () => Math.floor(rng.next() * config.vocab_size)),
  }));
  const runs = [];
  for (const variant of VARIANTS) {
    const saved = variant.leftOut.map((kernel) => tf.getKernel(kernel, 'wasm')!);
    for (const kernel of variant.leftOut) tf.unregisterKernel(kernel, 'wasm');
    const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1 }));
    const trainer = await createPolicyTrainer(model, { schedule: { learningRate: 1e-4 } });
    for (const kernel of saved) tf.registerKernel(kernel);
    trainer.sftStep(sequences);
    runs.push({ variant, model, trainer, rates: [] as number[], cpuRates: [] as number[] });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const run of runs) {
      const start = performance.now();
      const cpu = process.cpuUsage();
      for (let step = 0; step < STEPS; step++) run.trainer.sftStep(sequences);
      const used = process.cpuUsage(cpu);
      run.rates.push((16 * 128 * STEPS) / ((performance.now() - start) / 1000));
      run.cpuRates.push((16 * 128 * STEPS) / ((used.user + used.system) / 1e6));
    }
  }
  const base = median(runs[0]!.rates);
  const cpuBase = median(runs[0]!.cpuRates);
  for (const run of runs) {
    const rate = median(run.rates);
    const cpuRate = median(run.cpuRates);
    console.log(
      `${name} ${run.variant.name.padEnd(12)} ${rate.toFixed(0).padStart(6)} tok/s ×${(rate / base).toFixed(2)} [${run.rates.map((r) => r.toFixed(0)).join(', ')}] | ${cpuRate.toFixed(0).padStart(6)} tok/CPU-s ×${(cpuRate / cpuBase).toFixed(2)}`,
    );
    run.trainer.dispose();
    run.model.dispose();
  }
}
console.log(`load average at the end: ${load()}`);
