import { createRng, InvalidArgumentError, SAMPLE_REQUEST_DEFAULTS } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DistributionBuilder,
  type LogitsProcessorOptions,
  processLogits,
  resolveLogitsOptions,
} from './logits-processors.js';
import { rawLogprob, sequenceRng, TokenSampler } from './samplers.js';

/** Float64 reference: full sort, HF order (penalty → temperature → top-k → top-p → min-p). */
function referenceDistribution(
  logits: number[],
  options: LogitsProcessorOptions,
  previous: number[] = [],
): Map<number, number> {
  const { temperature = 1, topK = 0, topP = 1, minP = 0, repetitionPenalty = 1 } = options;
  const z = logits.slice();
  for (const token of new Set(previous)) {
    z[token] = z[token]! < 0 ? z[token]! * repetitionPenalty : z[token]! / repetitionPenalty;
  }
  const order = z.map((_, index) => index);
  order.sort((a, b) => z[b]! - z[a]! || a - b);
  if (temperature === 0) return new Map([[order[0]!, 0]]);
  const scaled = z.map((value) => value / temperature);
  let kept = topK > 0 ? order.slice(0, topK) : order.slice();
  const normalize = (tokens: number[]) => {
    const max = Math.max(...tokens.map((token) => scaled[token]!));
    const sum = tokens.reduce((acc, token) => acc + Math.exp(scaled[token]! - max), 0);
    return new Map(tokens.map((token) => [token, scaled[token]! - max - Math.log(sum)]));
  };
  if (topP < 1) {
    // unnormalized weights, compared with topP × total (exact on ties such as 5 × 0.1 vs 0.5)
    const max = scaled[kept[0]!]!;
    const weight = (token: number) => Math.exp(scaled[token]! - max);
    const total = kept.reduce((acc, token) => acc + weight(token), 0);
    let cumulative = 0;
    const nucleus: number[] = [];
    for (const token of kept) {
      nucleus.push(token);
      cumulative += weight(token);
      if (cumulative >= topP * total) break;
    }
    kept = nucleus;
  }
  if (minP > 0) {
    const probabilities = normalize(kept);
    const top = Math.exp(probabilities.get(kept[0]!)!);
    kept = kept.filter((token) => Math.exp(probabilities.get(token)!) >= minP * top);
  }
  return normalize(kept);
}

function expectMatchesReference(
  logits: number[],
  options: LogitsProcessorOptions,
  previous: number[] = [],
): void {
  const actual = processLogits(logits, options, previous);
  const expected = referenceDistribution(logits, options, previous);
  expect(actual.tokenIds).toEqual([...expected.keys()].sort((a, b) => a - b));
  actual.tokenIds.forEach((token, index) => {
    expect(actual.logprobs[index]).toBeCloseTo(expected.get(token)!, 12);
  });
}

describe('resolveLogitsOptions defaults', () => {
  it("should fill every omitted field with core's SAMPLE_REQUEST_DEFAULTS", () => {
    expect(resolveLogitsOptions({})).toEqual(SAMPLE_REQUEST_DEFAULTS);
    expect(resolveLogitsOptions(undefined)).toEqual(SAMPLE_REQUEST_DEFAULTS);
    expect(resolveLogitsOptions({ temperature: 0.5 })).toEqual({
      ...SAMPLE_REQUEST_DEFAULTS,
      temperature: 0.5,
    });
  });
});

describe('processLogits', () => {
  it('should compute hand-worked distributions', () => {
    const plain = processLogits([2, 1, 0, -1]);
    const normalizer = Math.log(Math.exp(2) + Math.exp(1) + 1 + Math.exp(-1));
    expect(plain.tokenIds).toEqual([0, 1, 2, 3]);
    expect(plain.logprobs[0]).toBeCloseTo(2 - normalizer, 14);
    // temperature 0.5 doubles the logits
    const hot = processLogits([1, 0], { temperature: 0.5 });
    expect(hot.logprobs[0]).toBeCloseTo(2 - Math.log(Math.exp(2) + 1), 14);
    // top-k 2
    const topK = processLogits([2, 1, 0, -1], { topK: 2 });
    expect(topK.tokenIds).toEqual([0, 1]);
    expect(topK.logprobs[1]).toBeCloseTo(1 - Math.log(Math.exp(2) + Math.exp(1)), 14);
    // top-p: p = [0.644, 0.237, 0.087, 0.032]; 0.644 < 0.7 ≤ 0.881 → 2 tokens; 0.6 → 1 token
    expect(processLogits([3, 2, 1, 0], { topP: 0.7 }).tokenIds).toEqual([0, 1]);
    expect(processLogits([3, 2, 1, 0], { topP: 0.6 }).tokenIds).toEqual([0]);
    // min-p 0.3: keep p ≥ 0.3·p_max, i.e. logit ≥ 3 + log 0.3 = 1.796
    expect(processLogits([3, 2, 1, 0], { minP: 0.3 }).tokenIds).toEqual([0, 1]);
    // repetition penalty 2: 2 → 1 (positive /2), −1 → −2 (negative ×2)
    const penalized = processLogits([2, 1.5, -1], { repetitionPenalty: 2 }, [0, 2, 0]);
    const z = [1, 1.5, -2];
    const zNormalizer = Math.log(z.reduce((acc, value) => acc + Math.exp(value), 0));
    expect(penalized.logprobs).toEqual(z.map((value) => expect.closeTo(value - zNormalizer, 14)));
    // greedy: lowest id on ties, logprob 0
    expect(processLogits([1, 3, 3, 0], { temperature: 0 })).toEqual({
      tokenIds: [1],
      logprobs: [0],
    });
  });

  it('should keep exactly the reference set for top-k, top-p and min-p (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -8, max: 8, noNaN: true }), { minLength: 1, maxLength: 40 }),
        fc.record({
          temperature: fc.constantFrom(0.3, 0.8, 1, 1.7),
          topK: fc.integer({ min: 0, max: 45 }),
          topP: fc.constantFrom(1, 0.99, 0.9, 0.5, 0.1),
          minP: fc.constantFrom(0, 0.01, 0.2, 0.9),
        }),
        (logits, options) => expectMatchesReference(logits, options),
      ),
      { seed: 7, numRuns: 400 },
    );
  });

  it('should handle ties and large vocabularies exactly', () => {
    expectMatchesReference([1, 1, 1, 1, 1], { topK: 3 });
    expectMatchesReference([1, 1, 1, 1, 1], { topP: 0.5 });
    const rng = createRng(3);
    const large = Array.from({ length: 5000 }, () => rng.nextNormal() * 2);
    for (const topP of [0.9, 0.5, 0.05]) expectMatchesReference(large, { topP, temperature: 0.8 });
    expectMatchesReference(large, { topK: 50, topP: 0.9 });
    expectMatchesReference(large, { topK: 1000, minP: 0.05, repetitionPenalty: 1.3 }, [1, 2, 3, 7]);
  });

  it('should reject bad options and inputs with typed errors', () => {
    expect(() => processLogits([1], { topP: 0 })).toThrow(/options.topP/);
    expect(() => processLogits([1], { topK: 1.5 })).toThrow(InvalidArgumentError);
    expect(() => processLogits([1], { temperature: -1 })).toThrow(/options.temperature/);
    expect(() => processLogits([1], { minP: 1 })).toThrow(/options.minP/);
    expect(() => processLogits([1], { repetitionPenalty: 0 })).toThrow(/repetitionPenalty/);
    expect(() => processLogits([], {})).toThrow(/non-empty/);
    expect(() => processLogits([Number.NaN])).toThrow(/finite/);
    expect(() => processLogits([1, 2], {}, [5])).toThrow(/previousTokenIds/);
  });
});

/** Upper 0.1% point of χ²(df) (Wilson–Hilferty). */
function chiSquareCritical(df: number): number {
  const z = 3.0902;
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

function chiSquare(counts: number[], probabilities: number[], total: number): number {
  return counts.reduce((acc, count, index) => {
    const expected = probabilities[index]! * total;
    return acc + (count - expected) ** 2 / expected;
  }, 0);
}

describe('TokenSampler', () => {
  const logits = [1.2, 0.3, -0.5, 2.0, 0.9, -1.5, 0.0, 1.6];

  const cases: [string, LogitsProcessorOptions][] = [
    ['plain', {}],
    ['temperature 0.7', { temperature: 0.7 }],
    ['top-k 4', { topK: 4 }],
    ['top-p 0.8', { topP: 0.8, temperature: 1.3 }],
    ['min-p 0.2', { minP: 0.2 }],
    ['penalty', { repetitionPenalty: 1.5 }],
  ];
  for (const [name, options] of cases) {
    it(`should sample frequencies matching the exact distribution (${name}, chi-square)`, () => {
      const resolved = resolveLogitsOptions(options);
      const previous = [0, 3];
      const exact = referenceDistribution(logits, options, previous);
      const sampler = new TokenSampler(logits.length, resolved);
      const rng = createRng(`chi-${name}`);
      const draws = 20000;
      const counts = new Array<number>(logits.length).fill(0);
      for (let draw = 0; draw < draws; draw++) {
        const { tokenId, logprob } = sampler.sample(logits, 0, rng, { penaltyTokens: previous });
        counts[tokenId]!++;
        if (draw < 50) expect(logprob).toBeCloseTo(exact.get(tokenId)!, 12);
      }
      const kept = [...exact.keys()].sort((a, b) => a - b);
      // never samples a removed token
      expect(counts.reduce((acc, count) => acc + count, 0)).toBe(
        kept.reduce((acc, token) => acc + counts[token]!, 0),
      );
      const statistic = chiSquare(
        kept.map((token) => counts[token]!),
        kept.map((token) => Math.exp(exact.get(token)!)),
        draws,
      );
      expect(statistic).toBeLessThan(chiSquareCritical(Math.max(1, kept.length - 1)));
    });
  }

  it('should detect a wrong distribution (the chi-square test has power)', () => {
    const sampler = new TokenSampler(logits.length, resolveLogitsOptions({ temperature: 1 }));
    const rng = createRng(1);
    const counts = new Array<number>(logits.length).fill(0);
    for (let draw = 0; draw < 20000; draw++) counts[sampler.sample(logits, 0, rng).tokenId]!++;
    const wrong = referenceDistribution(logits, { temperature: 0.9 });
    const statistic = chiSquare(
      counts,
      logits.map((_, token) => Math.exp(wrong.get(token)!)),
      20000,
    );
    expect(statistic).toBeGreaterThan(chiSquareCritical(logits.length - 1));
  });

  it('should reproduce samples from the same seed and differ across seeds', () => {
    const resolved = resolveLogitsOptions({ temperature: 0.9, topP: 0.95 });
    const run = (seed: number) => {
      const sampler = new TokenSampler(logits.length, resolved);
      const rng = sequenceRng(seed, 0, 1);
      return Array.from({ length: 64 }, () => sampler.sample(logits, 0, rng).tokenId);
    };
    expect(run(5)).toEqual(run(5));
    expect(run(5)).not.toEqual(run(6));
  });

  it('should return raw model logprobs and read rows at an offset', () => {
    const two = [...logits, ...logits.map((value) => -value)];
    const sampler = new TokenSampler(logits.length, resolveLogitsOptions({ temperature: 0 }));
    const { tokenId, logprob, modelLogprob } = sampler.sample(two, logits.length, createRng(0), {
      modelLogprob: true,
    });
    expect(tokenId).toBe(5); // argmax of the negated row
    expect(logprob).toBe(0);
    const negated = logits.map((value) => -value);
    const normalizer = Math.log(negated.reduce((acc, value) => acc + Math.exp(value), 0));
    expect(modelLogprob).toBeCloseTo(1.5 - normalizer, 12);
    expect(rawLogprob(negated, 0, negated.length, 5)).toBeCloseTo(1.5 - normalizer, 12);
  });

  it('should sample by inverse CDF in id order', () => {
    const builder = new DistributionBuilder(3);
    builder.build([0, 0, 0], 0, resolveLogitsOptions({}));
    expect([0, 0.33, 0.34, 0.66, 0.67, 0.999].map((u) => builder.sample(u))).toEqual([
      0, 0, 1, 1, 2, 2,
    ]);
  });
});
