/**
 * Math-verifier throughput: `pnpm --filter @rlvr/verifiers bench`.
 * Prints the median over repeated runs of checks/s and µs per check for typical responses
 * (distinct responses, gold answers reused across a group of 16 as in GRPO).
 */
import { createRng } from '@rlvr/core';
import { CORPUS } from '../src/math/__fixtures__/conformance-corpus.js';
import { FAMILY_CORPUS } from '../src/math/__fixtures__/conformance-families.js';
import {
  createMathVerifierPool,
  extractAnswer,
  mathEquivalent,
  verifyMath,
} from '../src/math/index.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const REPEATS = 9;

/** Runs `fn` on `count` fresh items per repeat (item indexes never repeat, so caches stay cold). */
function bench(
  name: string,
  count: number,
  fn: (index: number) => void,
  repeats = REPEATS,
): number {
  for (let index = 0; index < Math.min(count, 200); index++) fn(index); // warm-up
  const times: number[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    const offset = (repeat + 1) * count;
    const start = performance.now();
    for (let index = 0; index < count; index++) fn(offset + index);
    times.push(performance.now() - start);
  }
  const ms = median(times);
  const perCheckUs = (ms / count) * 1000;
  console.log(
    `${name.padEnd(52)} ${((count / ms) * 1000).toFixed(0).padStart(9)} checks/s   ${perCheckUs.toFixed(1).padStart(7)} µs/check`,
  );
  return perCheckUs;
}

const rng = createRng(2024);
const filler =
  'Let us think step by step. We set up the equation and simplify both sides carefully, ' +
  'checking each intermediate value before moving on. ';
const cot = filler.repeat(12); // ~1.5 kB of reasoning before the answer

const count = 1000;
const ints = Array.from({ length: count * (REPEATS + 1) }, () => rng.nextInt(1_000_000));
const gsm8k = ints.map((value) => `${cot}\n#### ${value}`);
const boxedFractions = ints.map(
  (value) => `${cot} so the answer is $\\boxed{\\frac{${value}}{${(value % 7) + 2}}}$.`,
);
const symbolic = ints.map((value) => `${cot} Hence \\boxed{x^2 + ${value + 1}x + ${value % 97}}.`);
const sets = ints.map((value) => `${cot} The roots are \\boxed{\\{${value}, -${value + 1}\\}}.`);

console.log(
  '@rlvr/verifiers math bench (median of 9 runs; answers distinct, so parse caches rarely hit)',
);
const typical = [
  bench('verifyMath  GSM8K "#### n" vs integer', count, (index) => {
    verifyMath(gsm8k[index]!, String(ints[index - (index % 16)]!));
  }),
  bench('verifyMath  \\boxed{\\frac{a}{b}} vs decimal', count, (index) => {
    verifyMath(boxedFractions[index]!, String(ints[index]! / ((ints[index]! % 7) + 2)));
  }),
  bench('verifyMath  polynomial (symbolic, 8 sample points)', count, (index) => {
    const gold = ints[index - (index % 16)]!;
    verifyMath(symbolic[index]!, `(x^2 + ${gold + 1}x) + ${gold % 97}`);
  }),
  bench('verifyMath  set of two roots', count, (index) => {
    verifyMath(sets[index]!, `-${ints[index]! + 1}, ${ints[index]!}`);
  }),
];
bench('extractAnswer  (1.5 kB chain of thought)', count, (index) => {
  extractAnswer(boxedFractions[index]!);
});
bench('mathEquivalent  \\frac{n}{d} vs decimal', count, (index) => {
  mathEquivalent(`\\frac{${ints[index]}}{4}`, String(ints[index]! / 4));
});
console.log(`typical check: median ${median(typical).toFixed(1)} µs (target: well under 1000 µs)`);

// Unseen input: every conformance case once, in a fresh order, so the parse caches are cold.
const corpus = [...CORPUS, ...FAMILY_CORPUS];
verifyMath('\\boxed{1}', '1'); // load mathjs outside the measurement
const perCheck = corpus.map(([, response, gold]) => {
  const start = performance.now();
  verifyMath(response, gold);
  return (performance.now() - start) * 1000;
});
const sorted = [...perCheck].sort((a, b) => a - b);
console.log(
  `${`conformance corpora, each case once (${corpus.length}, cold caches)`.padEnd(52)} median ${median(perCheck).toFixed(1)} µs, p90 ${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(1)} µs, max ${sorted[sorted.length - 1]!.toFixed(0)} µs (target: median ≤ 100 µs)`,
);

// Steady state on unseen answers: the JIT has seen the corpus once, the parse cache is evicted
// before each pass (2,200 distinct parses overflow its 2,048 entries), and each case keeps its
// fastest of 7 passes (filters preemption on a loaded machine); median over cases.
const fastest = corpus.map(() => Infinity);
for (let pass = 0; pass < 7; pass++) {
  for (let index = 0; index < 2200; index++) mathEquivalent(`${index}.5`, `${index}.25`);
  corpus.forEach(([, response, gold], index) => {
    const start = performance.now();
    verifyMath(response, gold);
    fastest[index] = Math.min(fastest[index]!, (performance.now() - start) * 1000);
  });
}
console.log(
  `${'conformance corpora, steady state (warm JIT, cold cache)'.padEnd(52)} median ${median(fastest).toFixed(1)} µs per check (fastest of 7 passes per case)`,
);

const pool = createMathVerifierPool({ size: 2, timeoutMs: 2000 });
const poolCount = count;
await pool.verify(gsm8k[0]!, String(ints[0])); // wait for the workers to start
const start = performance.now();
await Promise.all(
  Array.from({ length: poolCount }, (_, index) => pool.verify(gsm8k[index]!, String(ints[index]))),
);
const poolMs = performance.now() - start;
console.log(
  `${'pool (2 workers)  GSM8K checks incl. message passing'.padEnd(52)} ${((poolCount / poolMs) * 1000).toFixed(0).padStart(9)} checks/s`,
);
await pool.close();
