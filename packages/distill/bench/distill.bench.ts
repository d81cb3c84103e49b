/**
 * Throughput of the distillation math on plain arrays: `pnpm --filter @rlvr/distill bench`.
 * Medians of repeated runs; compare rows of one run.
 */
import { createRng } from '@rlvr/core';
import { distillationLossAndGradient, filterTraces, type TraceRecord } from '../src/index.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
function time(fn: () => void, repeats = 7): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

const rng = createRng(0);
for (const vocab of [64, 1024, 32000]) {
  const rows = vocab >= 32000 ? 32 : 256;
  const teacher = Array.from({ length: rows }, () =>
    Array.from({ length: vocab }, () => rng.nextNormal()),
  );
  const student = Array.from({ length: rows }, () =>
    Array.from({ length: vocab }, () => rng.nextNormal()),
  );
  const topK = teacher.map((row) => {
    const ids = [...row.keys()].sort((a, b) => row[b]! - row[a]!).slice(0, 20);
    return { tokenIds: ids, logprobs: ids.map((id) => row[id]! - 10) };
  });
  for (const divergence of ['forward-kl', 'jsd'] as const) {
    const full = time(() => {
      for (let r = 0; r < rows; r++)
        distillationLossAndGradient({
          teacher: teacher[r]!,
          studentLogits: student[r]!,
          divergence,
        });
    });
    const sparse = time(() => {
      for (let r = 0; r < rows; r++)
        distillationLossAndGradient({ teacher: topK[r]!, studentLogits: student[r]!, divergence });
    });
    console.log(
      `vocab ${String(vocab).padStart(5)} ${divergence.padEnd(10)} full: ${((rows / full) * 1000).toFixed(0).padStart(7)} tokens/s   top-20: ${((rows / sparse) * 1000).toFixed(0).padStart(7)} tokens/s`,
    );
  }
}
const traces: TraceRecord[] = Array.from({ length: 20_000 }, (_, i) => ({
  promptId: `p${i % 2000}`,
  prompt: 'q',
  sampleIndex: Math.floor(i / 2000),
  completion: Array.from({ length: 40 }, () => `w${rng.nextInt(50)}`).join(' '),
  tokenIds: new Array(40).fill(1),
  finishReason: 'stop',
  reward: 1,
  accepted: rng.next() < 0.5,
}));
const ms = time(() => filterTraces(traces, { maxPerPrompt: 4 }), 3);
console.log(
  `filterTraces: ${traces.length} traces in ${ms.toFixed(1)} ms (${((traces.length / ms) * 1000).toFixed(0)} traces/s, with dedupe)`,
);
