/**
 * Where one training step (forward + backward + AdamW, batch 16 × 128) spends its time, per tfjs
 * kernel, for the 0.8M and 5M configs of issue #14 on what `selectBackend()` picks: `tf.profile`
 * over `PROFILE_STEPS` steps after a warm-up, kernels grouped by name, sorted by time.
 *
 * Run: `npx tsx bench/step-profile.bench.ts` in packages/trainer. Env: PROFILE_STEPS (default 2),
 * PROFILE_CONFIGS (default "0.8M,5M"), PROFILE_MATMUL ("auto" | "onnxruntime" | "backend").
 */
import { execFileSync } from 'node:child_process';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import {
  createLlamaModel,
  createPolicyTrainer,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';
import { BENCH_CONFIGS } from './configs.js';

const STEPS = Number(process.env.PROFILE_STEPS ?? 2);
const CHOSEN = (process.env.PROFILE_CONFIGS ?? '0.8M,5M').split(',');
const MATMUL = (process.env.PROFILE_MATMUL ?? 'auto') as 'auto' | 'onnxruntime' | 'backend';
const CONFIGS = BENCH_CONFIGS;
const load = () => execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0];

const selected = await selectBackend({ matMul: MATMUL });
console.log(`backend ${selected.name}, matMul ${selected.matMul}, load ${load()}`);
for (const name of CHOSEN) {
  const config = parseLlamaConfig({ ...CONFIGS[name], max_position_embeddings: 256 });
  const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1 }));
  const trainer = await createPolicyTrainer(model, { schedule: { learningRate: 1e-4 } });
  const rng = createRng(2);
  const sequences: TokenSequence[] = Array.from({ length: 16 }, () => ({
    promptIds: [Math.floor(rng.next() * config.vocab_size)],
    completionIds: Array.from({ length: 128 }, () => Math.floor(rng.next() * config.vocab_size)),
  }));
  trainer.sftStep(sequences);
  const start = performance.now();
  const info = await tf.profile(() => {
    for (let step = 0; step < STEPS; step++) trainer.sftStep(sequences);
  });
  const wall = (performance.now() - start) / STEPS;
  const byKernel = new Map<string, { ms: number; calls: number }>();
  for (const kernel of info.kernels) {
    const entry = byKernel.get(kernel.name) ?? { ms: 0, calls: 0 };
    entry.ms += (kernel.kernelTimeMs as number) / STEPS;
    entry.calls += 1 / STEPS;
    byKernel.set(kernel.name, entry);
  }
  const rows = [...byKernel].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((sum, [, entry]) => sum + entry.ms, 0);
  console.log(
    `\n${name}: ${wall.toFixed(0)} ms/step wall (profiled), kernels ${total.toFixed(0)} ms, outside kernels ${(wall - total).toFixed(0)} ms, load ${load()}`,
  );
  console.log('| kernel | ms/step | % of kernels | calls/step |');
  console.log('|---|---|---|---|');
  for (const [kernel, entry] of rows.slice(0, 25)) {
    console.log(
      `| ${kernel} | ${entry.ms.toFixed(1)} | ${((100 * entry.ms) / total).toFixed(1)} | ${entry.calls.toFixed(0)} |`,
    );
  }
  trainer.dispose();
  model.dispose();
}
