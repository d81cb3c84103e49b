/**
 * Weights built in vs weights as graph inputs, side by side: `npx tsx bench/weight-sync.bench.ts`
 * (from packages/rollout; env SIZES=5M,58M REPEATS=5 TOPP=1,0.9 WORKERS=2 THREADS=1).
 *
 * Two loop-engine samplers on one random checkpoint — `weightSync: 'rebuild'` (weights built into
 * the graph, pre-packed by ONNX Runtime) and `'inputs'` — sample G = 64 × 128 tokens of one
 * 32-token prompt at temperature 0.8, alternating; prints medians of wall time and of process CPU
 * time (tokens per CPU-second: steadier than wall time on a shared machine) and the load average.
 */
import { loadavg } from 'node:os';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { createOnnxSampler } from '../src/index.js';

const CONFIGS: Record<string, object> = {
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
const sizes = (process.env.SIZES ?? '5M,58M').split(',');
const REPEATS = Number(process.env.REPEATS ?? 5);
const topPs = (process.env.TOPP ?? '1,0.9').split(',').map(Number);
const W = Number(process.env.WORKERS ?? 2),
  T = Number(process.env.THREADS ?? 1);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(`workers ${W} threads ${T}; load at start ${load()}`);
for (const size of sizes) {
  const config = parseLlamaConfig({
    model_type: 'llama',
    max_position_embeddings: 512,
    ...CONFIGS[size],
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 1, std: 0.05 });
  const rng = createRng(7);
  const prompt = Array.from({ length: 32 }, () => 4 + rng.nextInt(config.vocab_size - 4));
  const modes = ['rebuild', 'inputs'] as const;
  const samplers = await Promise.all(
    modes.map((weightSync) =>
      createOnnxSampler({
        checkpoint,
        engine: 'loop',
        workers: W,
        threads: T,
        eosTokenIds: [],
        weightSync,
      }),
    ),
  );
  for (const s of samplers) await s.sample({ prompts: [prompt], n: 2, maxNewTokens: 2, seed: 0 });
  const res: Record<string, { wall: number[]; cpu: number[] }> = {};
  let seed = 1;
  for (let r = 0; r < REPEATS; r++)
    for (const topP of topPs)
      for (const [i, s] of samplers.entries()) {
        const key = `${modes[i]} top-p ${topP}`;
        res[key] ??= { wall: [], cpu: [] };
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await s.sample({
          prompts: [prompt],
          n: 64,
          maxNewTokens: 128,
          temperature: 0.8,
          topP,
          seed: seed++,
        });
        const c = process.cpuUsage(c0);
        res[key].wall.push((performance.now() - t0) / 1000);
        res[key].cpu.push((c.user + c.system) / 1e6);
      }
  for (const s of samplers) await s.close();
  const tok = 64 * 128;
  for (const topP of topPs) {
    const [a, b] = modes.map((m) => res[`${m} top-p ${topP}`]!);
    console.log(
      `${size} top-p ${topP}: built-in ${(tok / med(a!.wall)).toFixed(0)} tok/s wall, ${(tok / med(a!.cpu)).toFixed(0)} tok/cpu-s | inputs ${(tok / med(b!.wall)).toFixed(0)} tok/s wall, ${(tok / med(b!.cpu)).toFixed(0)} tok/cpu-s | inputs/built-in wall ${(med(a!.wall) / med(b!.wall)).toFixed(3)}x cpu ${(med(a!.cpu) / med(b!.cpu)).toFixed(3)}x  (wall runs ${a!.wall.map((x) => x.toFixed(2)).join(',')} vs ${b!.wall.map((x) => x.toFixed(2)).join(',')})`,
    );
  }
  console.log(`load ${load()}`);
}
