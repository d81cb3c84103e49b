/**
 * Which engine is faster for a GRPO step at a model size: `pnpm --filter @rlvr/rollout exec tsx
 * bench/engine-choice.bench.ts` (ENGINE_MODELS=tiny,0.8M,5M,20M; ENGINE_REPEATS=3; ENGINE_WORKERS=1).
 *
 * One GRPO-like step = `updateWeights` + one `sample` of 16 prompts × 8 samples, 12-token prompts,
 * 48 new tokens (EOS ignored), temperature 1, top-p 1, in the steady state of a training run: after
 * a first, untimed update (the `loop` engine's default `weightSync: 'auto'` switches to weight
 * inputs there; later updates are in-place copies; `optimum` rebuilds every time).
 * Engines alternate within each repeat; rows are medians. The machine is shared: compare rows of
 * one run. The numbers behind `createOnnxSampler`'s default engine (README, "Engines").
 */
import { createRng } from '@rlvr/core';
import { countParameters, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '../src/index.js';

const CONFIGS: Record<string, Record<string, unknown>> = {
  // apps/teacher-student's default teacher over its 22-token vocabulary
  tiny: {
    vocab_size: 22,
    hidden_size: 96,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 256,
  },
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
  '20M': {
    vocab_size: 4096,
    hidden_size: 512,
    num_hidden_layers: 6,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    intermediate_size: 1376,
  },
};
const REPEATS = Number(process.env.ENGINE_REPEATS ?? 3);
const WORKERS = Number(process.env.ENGINE_WORKERS ?? 1);
const THREADS = Number(process.env.ENGINE_THREADS ?? 1);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

for (const name of (process.env.ENGINE_MODELS ?? 'tiny,0.8M,5M').split(',')) {
  const config = parseLlamaConfig({ model_type: 'llama', ...CONFIGS[name] });
  const checkpoints = [1, 2].map((seed) => createRandomCheckpoint(config, { seed, std: 0.05 }));
  const rng = createRng(3);
  const prompts = Array.from({ length: 16 }, () =>
    Array.from({ length: 12 }, () => 4 + rng.nextInt(config.vocab_size - 4)),
  );
  const request = { prompts, n: 8, maxNewTokens: 48, temperature: 1, seed: 1 };
  const times: Record<string, { create: number[]; sync: number[]; sample: number[] }> = {};
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    for (const engine of ['optimum', 'loop'] as const) {
      times[engine] ??= { create: [], sync: [], sample: [] };
      const t = times[engine];
      let started = performance.now();
      const sampler: OnnxSampler = await createOnnxSampler({
        checkpoint: checkpoints[0]!,
        engine,
        workers: WORKERS,
        threads: THREADS,
        eosTokenIds: [],
      });
      t.create.push(performance.now() - started);
      await sampler.sample({ ...request, prompts: prompts.slice(0, 1), n: 1, maxNewTokens: 2 });
      await sampler.updateWeights({ step: 1, tensors: checkpoints[1]!.tensors });
      await sampler.sample({ ...request, prompts: prompts.slice(0, 1), n: 1, maxNewTokens: 2 });
      started = performance.now();
      await sampler.updateWeights({ step: 2, tensors: checkpoints[0]!.tensors });
      t.sync.push(performance.now() - started);
      started = performance.now();
      await sampler.sample(request);
      t.sample.push(performance.now() - started);
      await sampler.close();
    }
  }
  const tokens = 16 * 8 * 48;
  for (const [engine, t] of Object.entries(times)) {
    const step = median(t.sync) + median(t.sample);
    console.log(
      [
        name,
        `${(countParameters(config) / 1e6).toFixed(2)}M`,
        engine,
        `create ${median(t.create).toFixed(0)} ms`,
        `sync ${median(t.sync).toFixed(0)} ms`,
        `sample ${median(t.sample).toFixed(0)} ms (${((tokens / median(t.sample)) * 1000).toFixed(0)} tok/s)`,
        `step ${step.toFixed(0)} ms`,
      ].join(' | '),
    );
  }
}
