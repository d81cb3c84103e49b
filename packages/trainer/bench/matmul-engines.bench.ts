/**
 * The trainer's matrix products on the two engines of the wasm backend, side by side (alternating,
 * medians of 9): tfjs-backend-wasm's XNNPACK `tf.matMul` vs this package's onnxruntime-node (MLAS)
 * kernel on 1 and 2 threads, including the copy of the product into the wasm heap; plus the fixed
 * cost of one onnxruntime kernel call (8 × 8 × 8). Shapes are those of a 16 × 128 batch.
 *
 * Run: `npx tsx bench/matmul-engines.bench.ts` in this folder.
 */
import { cpus, loadavg } from 'node:os';
import * as tf from '@tensorflow/tfjs-core';
import { ortMatMulOp } from '../src/backend/ort-matmul.js';
import { selectBackend } from '../src/index.js';

const SHAPES: [number, number, number, boolean, boolean][] = [
  [8, 8, 8, false, false],
  [2048, 128, 384, false, false],
  [2048, 256, 512, false, false],
  [2048, 256, 1376, false, false],
  [2048, 688, 256, false, false],
  [256, 2048, 1376, true, false],
  [2048, 1376, 256, false, true],
];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const time = (run: () => tf.Tensor) => {
  const start = performance.now();
  const out = run();
  out.dataSync();
  const ms = performance.now() - start;
  out.dispose();
  return ms;
};

await selectBackend({ candidates: ['wasm'] });
console.log(`${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)}`);
for (const [m, k, n, transposeA, transposeB] of SHAPES) {
  const a = tf.randomNormal(transposeA ? [k, m] : [m, k]) as tf.Tensor2D;
  const b = tf.randomNormal(transposeB ? [n, k] : [k, n]) as tf.Tensor2D;
  const results: Record<string, number[]> = {
    xnnpack: [],
    'ort 1 thread': [],
    'ort 2 threads': [],
  };
  for (let round = 0; round < 9; round++) {
    // XNNPACK takes only plain products: transposes are explicit copies, as the trainer does them.
    results.xnnpack!.push(
      time(() =>
        tf.tidy(() =>
          tf.matMul(transposeA ? tf.transpose(a) : a, transposeB ? tf.transpose(b) : b),
        ),
      ),
    );
    for (const threads of [1, 2]) {
      await selectBackend({ candidates: ['wasm'], matMulThreads: threads });
      results[`ort ${threads} thread${threads > 1 ? 's' : ''}`]!.push(
        time(() => ortMatMulOp(a, b, transposeA, transposeB)),
      );
    }
  }
  const flop = 2 * m * k * n;
  const cells = Object.entries(results).map(([engine, times]) => {
    const ms = median(times);
    return `${engine} ${ms.toFixed(3)} ms (${(flop / ms / 1e6).toFixed(1)} GFLOP/s)`;
  });
  const label = `${m}×${k}×${n}${transposeA ? ' Aᵀ' : ''}${transposeB ? ' Bᵀ' : ''}`;
  console.log(`${label.padEnd(22)} ${cells.join(' | ')}`);
  tf.dispose([a, b]);
}
console.log(`load average at the end ${loadavg()[0]!.toFixed(2)}`);
