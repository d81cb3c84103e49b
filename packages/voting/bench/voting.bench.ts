/**
 * Voting throughput with the default (math-verifier) extraction and equivalence:
 * `pnpm --filter @rlvr/voting bench`. Medians of repeated runs; compare rows of one run.
 */
import { createRng } from '@rlvr/core';
import { accuracyCurve, majorityVote } from '../src/index.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function bench(fn: () => void, repeats = 9): number {
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
const forms = [
  '\\boxed{\\frac{1}{2}}',
  'The answer is 0.5',
  '#### 1/2',
  '\\boxed{3}',
  'Final answer: 7',
  'I am not sure',
];
for (const n of [16, 64, 256]) {
  const samples = Array.from(
    { length: n },
    () => `Let me think step by step... ${forms[rng.nextInt(forms.length)]}`,
  );
  const vote = bench(() => {
    majorityVote(samples);
  });
  const curve = bench(() => {
    accuracyCurve(samples, '1/2');
  });
  console.log(
    `n=${String(n).padStart(3)}  majorityVote ${vote.toFixed(2).padStart(7)} ms (${((vote / n) * 1000).toFixed(1)} µs/sample)   accuracyCurve ${curve.toFixed(2).padStart(7)} ms`,
  );
}
