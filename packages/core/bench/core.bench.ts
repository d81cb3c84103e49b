/**
 * Throughput of the core GRPO math on plain arrays: `pnpm --filter @rlvr/core bench`.
 * Prints medians over repeated runs (the machines are noisy: compare rows of one run, not runs).
 */
import {
  aggregateLoss,
  createRng,
  filterGroups,
  groupAdvantages,
  majAtK,
  mismatchCorrection,
  passAtK,
  policyLoss,
} from '../src/index.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function bench(name: string, work: number, unit: string, fn: () => void, repeats = 15): void {
  fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  const ms = median(times);
  console.log(
    `${name.padEnd(58)} ${ms.toFixed(3).padStart(9)} ms   ${((work / ms) * 1000).toExponential(2).padStart(9)} ${unit}/s`,
  );
}

const rng = createRng(0);
const groups = 64;
const groupSize = 16;
const rewards = Array.from({ length: groups * groupSize }, () => (rng.next() < 0.4 ? 1 : 0));
const tokens = 256;
const logprobs = Array.from({ length: groups * groupSize }, () =>
  Array.from({ length: tokens }, () => -rng.next() * 3),
);
const oldLogprobs = logprobs.map((row) => row.map((x) => x + (rng.next() - 0.5) * 0.1));
const refLogprobs = logprobs.map((row) => row.map((x) => x + (rng.next() - 0.5) * 0.2));
const advantages = groupAdvantages(rewards, { groupSize }).advantages;
const totalTokens = groups * groupSize * tokens;

console.log(
  `@rlvr/core bench: ${groups} groups × G=${groupSize}, ${tokens} tokens each (${totalTokens} tokens); median of 15`,
);
bench('groupAdvantages (GRPO, group std)', rewards.length, 'samples', () => {
  groupAdvantages(rewards, { groupSize });
});
bench('groupAdvantages (GDPO, 3 rewards)', rewards.length, 'samples', () => {
  groupAdvantages([rewards, rewards.map((r) => 1 - r), rewards], {
    groupSize,
    multiReward: 'normalize_then_sum',
  });
});
bench('filterGroups', groups, 'groups', () => {
  const perGroup = Array.from({ length: groups }, (_, g) =>
    rewards.slice(g * groupSize, (g + 1) * groupSize),
  );
  filterGroups(perGroup);
});
bench(
  'policyLoss (token ratio, clip-higher, dual-clip, k3 KL)',
  totalTokens,
  'tokens',
  () => {
    policyLoss({
      logprobs,
      oldLogprobs,
      advantages,
      refLogprobs,
      klCoefficient: 0.04,
      epsilonLow: 0.2,
      epsilonHigh: 0.28,
      dualClip: 3,
      aggregation: 'token-mean',
    });
  },
  7,
);
bench(
  'aggregateLoss (seq-mean-token-mean)',
  totalTokens,
  'tokens',
  () => {
    aggregateLoss(logprobs, null, 'seq-mean-token-mean');
  },
  7,
);
bench(
  'mismatchCorrection (token-truncate)',
  totalTokens,
  'tokens',
  () => {
    mismatchCorrection({ trainerLogprobs: logprobs, behaviourLogprobs: oldLogprobs });
  },
  7,
);
bench('passAtK (n=64, all c, k=1..64)', 64 * 64, 'calls', () => {
  for (let c = 0; c < 64; c++) for (let k = 1; k <= 64; k++) passAtK(64, c, k);
});
bench(
  'majAtK (n=64, 5 clusters, k=1..64)',
  64,
  'calls',
  () => {
    for (let k = 1; k <= 64; k++) majAtK({ clusterSizes: [30, 20, 8, 4, 2], correctCluster: 0, k });
  },
  5,
);
