/**
 * One projection at decode shapes with its weights constant (pre-packed by MLAS) or as a graph
 * input, in four layouts: `npx tsx bench/projection-packing.bench.ts` (from packages/rollout; env
 * M=64 rows, NS=512,1408,32000 output widths, TH=1 threads, IT=40 runs per timing).
 *
 * `x` `[M, 512]` times 8 weight matrices (1 for N > 4000): `Gemm(x, W, transB)` with `W` constant
 * or an input, `MatMul(x, Wᵀ)` with `Wᵀ` constant or an input, and `Gemm(W, x, transB)` +
 * `Transpose` (W never packed); medians of 9 timings in process CPU time per product.
 */

import { loadavg } from 'node:os';
import { GraphBuilder, OnnxDataType as T, valueInfo } from '@rlvr/model';
import ort from 'onnxruntime-node';

const M = Number(process.env.M ?? 64),
  K = 512,
  threads = Number(process.env.TH ?? 1);
const shapes = (process.env.NS ?? '512,1408,32000').split(',').map(Number);
const REPS = 9,
  ITERS = Number(process.env.IT ?? 40);
const rand = (n: number) => {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = Math.random() - 0.5;
  return a;
};
function model(N: number, op: 'Gemm' | 'MatMul' | 'Swap', constB: boolean, stack = 8) {
  const g = new GraphBuilder();
  const bDims = op === 'MatMul' ? [K, N] : [N, K];
  const data = rand(N * K);
  const feeds: Record<string, ort.Tensor> = { x: new ort.Tensor('float32', rand(M * K), [M, K]) };
  const inputs = [valueInfo('x', T.FLOAT, [M, K])];
  const outs = [];
  // stack independent products of the same x with `stack` different weights (like layers)
  for (let s = 0; s < stack; s++) {
    const name = `w${s}`;
    let b: string;
    if (constB) b = g.weight(name, bDims, data);
    else {
      b = name;
      inputs.push(valueInfo(name, T.FLOAT, bDims));
      feeds[name] = new ort.Tensor('float32', data, bDims);
    }
    const y =
      op === 'Gemm'
        ? g.op('Gemm', ['x', b], { transB: 1 })
        : op === 'Swap'
          ? g.op('Transpose', [g.op('Gemm', [b, 'x'], { transB: 1 })], { perm: [1, 0] })
          : g.op('MatMul', ['x', b]);
    outs.push(g.op('ReduceSum', [y], { keepdims: 0 }));
  }
  const sum = outs.reduce((a, b) => g.op('Add', [a, b]));
  g.add('Identity', [sum], {}, ['out']);
  const bytes = g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'x',
    graph: { name: 'g', input: inputs, output: [valueInfo('out', T.FLOAT, [])] },
  });
  return { bytes, feeds };
}
const variants: [string, 'Gemm' | 'MatMul' | 'Swap', boolean][] = [
  ['swap input', 'Swap', false],
  ['gemmT const', 'Gemm', true],
  ['gemmT input', 'Gemm', false],
  ['matmul const', 'MatMul', true],
  ['matmul input', 'MatMul', false],
];
const opts: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};
console.log(
  `M=${M} K=${K} threads=${threads} load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const N of shapes) {
  const stack = N > 4000 ? 1 : 8;
  const sessions = [];
  for (const [name, op, c] of variants) {
    const { bytes, feeds } = model(N, op, c, stack);
    sessions.push({ name, s: await ort.InferenceSession.create(bytes, opts), feeds });
  }
  const times: number[][] = sessions.map(() => []);
  for (let r = 0; r < REPS; r++)
    for (const [i, v] of sessions.entries()) {
      await v.s.run(v.feeds);
      const c0 = process.cpuUsage();
      for (let k = 0; k < ITERS; k++) await v.s.run(v.feeds);
      const c = process.cpuUsage(c0);
      times[i]!.push((c.user + c.system) / 1000 / ITERS / stack);
    }
  const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;
  const base = med(times[0]!);
  console.log(
    `N=${N}: ` +
      sessions
        .map((v, i) => {
          const m = med(times[i]!);
          return `${v.name} ${m.toFixed(3)} ms (${((2 * M * K * N) / m / 1e6).toFixed(1)} GF/s, ${(base / m).toFixed(2)}x)`;
        })
        .join(' | '),
  );
}
console.log(
  `load after ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
