/**
 * The loop engine's in-graph sampling step alone, top-p 1 against exact top-p 0.9: one `emitSample`
 * graph over `[ROWS, VOCAB]` standard-normal logits at temperature 0.8, one thread, CPU time per
 * step (median of 15 runs per round, median of 5 rounds, the two settings alternating).
 *
 * Run: `npx tsx bench/top-p.bench.ts` (from packages/rollout). Env: VOCAB (default 32000), ROWS
 * (default 32, one worker's share of G = 64), PROFILE=1 (onnxruntime's per-node profile of the
 * session, written to /tmp/top-p-profile*.json).
 */
import { createRng } from '@rlvr/core';
import type * as Ort from 'onnxruntime-node';
import type { Sampling } from '../src/loop/loop-sampling.js';
import { samplingGraph, samplingScalarFeeds } from '../src/loop/sampling-graph.js';
import { loadOrt } from '../src/onnx/ort.js';

const VOCAB = Number(process.env.VOCAB ?? 32000);
const ROWS = Number(process.env.ROWS ?? 32);
const ort = await loadOrt();
const session = await ort.InferenceSession.create(samplingGraph(VOCAB), {
  intraOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  ...(process.env.PROFILE === '1'
    ? { enableProfiling: true, profileFilePrefix: '/tmp/top-p-profile' }
    : {}),
});
const rng = createRng(1);
const logits = new Float32Array(ROWS * VOCAB);
for (let index = 0; index < logits.length; index++) {
  const u = rng.next() || 1e-12;
  logits[index] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

function feeds(topP: number): Record<string, Ort.Tensor> {
  const { Tensor } = ort;
  const values: Record<keyof Sampling, number | boolean> = {
    invTemperature: 1 / 0.8,
    greedy: false,
    filter: topP < 1,
    listSize: VOCAB,
    cheapSize: 64,
    middleSize: 1024,
    topP,
    minP: 0,
    useMinP: false,
    penalty: 1,
    usePenalty: false,
    modelLogprobs: false,
  };
  const out: Record<string, Ort.Tensor> = {
    logits: new Tensor('float32', logits, [ROWS, VOCAB]),
    uniform: new Tensor('float32', new Float32Array(ROWS).fill(0.5), [ROWS, 1]),
    seen: new Tensor('bool', new Uint8Array(ROWS * VOCAB), [ROWS, VOCAB]),
  };
  Object.assign(out, samplingScalarFeeds(ort, values));
  return out;
}

const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const rounds: Record<string, number[]> = { '1': [], '0.9': [] };
for (let round = 0; round < 5; round++) {
  for (const topP of [1, 0.9]) {
    const input = feeds(topP);
    for (let warm = 0; warm < 2; warm++) await session.run(input);
    const times: number[] = [];
    for (let run = 0; run < 15; run++) {
      const start = cpuMs();
      await session.run(input);
      times.push(cpuMs() - start);
    }
    rounds[String(topP)]!.push(median(times));
  }
}
const p1 = median(rounds['1']!);
const p09 = median(rounds['0.9']!);
console.log(`sampling step, ${ROWS} rows × ${VOCAB} vocabulary, 1 thread, CPU ms per step:`);
console.log(`- top-p 1:   ${p1.toFixed(2)}`);
console.log(`- top-p 0.9: ${p09.toFixed(2)} (exact nucleus: +${(p09 - p1).toFixed(2)} ms)`);
await session.release();
