/**
 * One round of bench/trainer.bench.ts in its own process (so its peak RSS is its own): builds a
 * model of the given shape with random weights, a PolicyTrainer, runs one warm-up step and
 * `steps` timed steps, and prints one JSON line: tokensPerSecond (completion tokens per step / the
 * median step time), stepSeconds (median), cpuSecondsPerStep (median user + system time), peakRssBytes (VmHWM since the weights exist: reset after the model is
 * built and the checkpoint it was built from is freed), plus the trainer's memory plan.
 *
 * Usage: tsx bench/trainer-worker.ts '<json>' with fields of BenchShape (bench/shapes.ts), mode
 * ("sft" | "grpo"), batch, seq (completion tokens; prompt tokens `prompt`, default 1), steps, lora
 * (PolicyTrainerOptions.lora, optional), gradientCheckpointing (optional).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRng } from '@rlvr/core';
import { type Checkpoint, parseModelConfig } from '@rlvr/model';
import {
  createLlamaModel,
  createPolicyTrainer,
  type LoraOptions,
  planMemory,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';
import { expectedShapes } from '../src/model/checkpoint-tensors.js';

type Job = {
  config: Record<string, unknown>;
  mode: 'sft' | 'grpo';
  batch: number;
  seq: number;
  prompt?: number;
  steps: number;
  lora?: LoraOptions;
  gradientCheckpointing?: boolean | 'auto';
  memoryLimitBytes?: number;
};

const job = JSON.parse(process.argv[2]!) as Job;
const config = parseModelConfig(job.config);

/** Random weights in the config's shapes (uniform ±0.04, norms 1), fast: the bench times training. */
function randomCheckpoint(): Checkpoint {
  let state = 0x9e3779b9;
  const tensors = [...expectedShapes(config)].map(([name, shape]) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (name.endsWith('norm.weight')) data.fill(1);
    else {
      for (let i = 0; i < data.length; i++) {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        data[i] = ((state >>> 0) / 2 ** 32 - 0.5) * 0.08;
      }
    }
    return { name, shape, data };
  });
  return { config, tensors };
}

const vmHwm = () => {
  const status = readFileSync('/proc/self/status', 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
};

await selectBackend();
let checkpoint: Checkpoint | undefined = randomCheckpoint();
const model = await createLlamaModel(checkpoint, { engine: 'native', checkFinite: false });
checkpoint = undefined;
const options = {
  schedule: { learningRate: 1e-5 },
  ...(job.mode === 'grpo'
    ? {
        grpo: {
          beta: 0.04,
          epsilonLow: 0.2,
          epsilonHigh: 0.28,
          lossAggregation: 'token-mean' as const,
        },
      }
    : {}),
  ...(job.lora ? { lora: job.lora } : {}),
  ...(job.gradientCheckpointing === undefined
    ? {}
    : { gradientCheckpointing: job.gradientCheckpointing }),
  ...(job.memoryLimitBytes === undefined ? {} : { memoryLimitBytes: job.memoryLimitBytes }),
};
const plan = planMemory(config, {
  ...options,
  microBatchTokens: job.batch * (job.seq + (job.prompt ?? 1)),
  rowLength: job.seq + (job.prompt ?? 1),
});
const trainer = await createPolicyTrainer(model, options);
(globalThis as { gc?: () => void }).gc?.();
(globalThis as { gc?: () => void }).gc?.();
// the peak from here on: the training process with its weights (and reference) in memory
writeFileSync('/proc/self/clear_refs', '5');
const rng = createRng(1);
const sequences: TokenSequence[] = Array.from({ length: job.batch }, () => ({
  promptIds: Array.from({ length: job.prompt ?? 1 }, () =>
    Math.floor(rng.next() * config.vocab_size),
  ),
  completionIds: Array.from({ length: job.seq }, () => Math.floor(rng.next() * config.vocab_size)),
}));
const advantages = sequences.map(() => 2 * rng.next() - 1);
const step = () => {
  if (job.mode === 'sft') trainer.sftStep(sequences);
  else trainer.grpoStep({ sequences, advantages });
};
const warm = performance.now();
step();
const firstStepSeconds = (performance.now() - warm) / 1000;
const times: number[] = [];
const cpu: number[] = [];
for (let i = 0; i < job.steps; i++) {
  const start = performance.now();
  const startCpu = process.cpuUsage();
  step();
  times.push((performance.now() - start) / 1000);
  const used = process.cpuUsage(startCpu);
  cpu.push((used.user + used.system) / 1e6);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
console.log(
  JSON.stringify({
    tokensPerSecond: (job.batch * job.seq) / median(times),
    stepSeconds: median(times),
    cpuSecondsPerStep: median(cpu),
    firstStepSeconds,
    peakRssBytes: vmHwm(),
    parameters: model.parameterCount,
    plan: {
      totalBytes: plan.totalBytes,
      gradientCheckpointing: plan.gradientCheckpointing,
      parts: plan.parts,
    },
  }),
);
trainer.dispose();
model.dispose();
