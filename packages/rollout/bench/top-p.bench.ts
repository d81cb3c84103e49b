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
import { OnnxDataType as DataType, GraphBuilder, valueInfo } from '@rlvr/model';
import type * as Ort from 'onnxruntime-node';
import { emitSample, type Sampling } from '../src/loop/loop-sampling.js';
import { loadOrt } from '../src/onnx/ort.js';

const SCALARS: [keyof Sampling, number][] = [
  ['invTemperature', DataType.FLOAT],
  ['greedy', DataType.BOOL],
  ['filter', DataType.BOOL],
  ['listSize', DataType.INT64],
  ['cheapSize', DataType.INT64],
  ['middleSize', DataType.INT64],
  ['topP', DataType.FLOAT],
  ['minP', DataType.FLOAT],
  ['useMinP', DataType.BOOL],
  ['penalty', DataType.FLOAT],
  ['usePenalty', DataType.BOOL],
  ['modelLogprobs', DataType.BOOL],
];
const VOCAB = Number(process.env.VOCAB ?? 32000);
const ROWS = Number(process.env.ROWS ?? 32);
const names = Object.fromEntries(SCALARS.map(([key]) => [key, key])) as Sampling;

function samplingGraph(): Uint8Array {
  const g = new GraphBuilder();
  const [token, logprob] = emitSample(g, 'logits', 'uniform', 'seen', names, VOCAB);
  g.add('Identity', [token], {}, ['token']);
  g.add('Identity', [logprob], {}, ['logprob']);
  return g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'bench',
    graph: {
      name: 'sample',
      input: [
        valueInfo('logits', DataType.FLOAT, ['R', VOCAB]),
        valueInfo('uniform', DataType.FLOAT, ['R', 1]),
        valueInfo('seen', DataType.BOOL, ['R', VOCAB]),
        ...SCALARS.map(([key, type]) => valueInfo(key, type, [])),
      ],
      output: [
        valueInfo('token', DataType.INT64, ['R', 1]),
        valueInfo('logprob', DataType.FLOAT, ['R', 1]),
      ],
    },
  });
}

const ort = await loadOrt();
const session = await ort.InferenceSession.create(samplingGraph(), {
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
  for (const [key, type] of SCALARS) {
    const value = values[key];
    out[key] =
      type === DataType.FLOAT
        ? new Tensor('float32', Float32Array.of(value as number), [])
        : type === DataType.INT64
          ? new Tensor('int64', BigInt64Array.of(BigInt(value as number)), [])
          : new Tensor('bool', Uint8Array.of(value ? 1 : 0), []);
  }
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
