import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { createRng } from './rng.js';

/** Independent BigInt implementation of xoshiro128** (the reference C code, line by line). */
function referenceXoshiro(state: [number, number, number, number]) {
  const mask = (1n << 32n) - 1n;
  const s = state.map(BigInt);
  const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (32n - k))) & mask;
  const next = () => {
    const result = (rotl((s[1]! * 5n) & mask, 7n) * 9n) & mask;
    const t = (s[1]! << 9n) & mask;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11n);
    return Number(result);
  };
  const jump = () => {
    const JUMP = [0x8764000bn, 0xf542d2d3n, 0x6fa035c3n, 0x77f2db5bn];
    const acc = [0n, 0n, 0n, 0n];
    for (const word of JUMP) {
      for (let b = 0n; b < 32n; b++) {
        if (word & (1n << b)) for (let i = 0; i < 4; i++) acc[i]! ^= s[i]!;
        next();
      }
    }
    for (let i = 0; i < 4; i++) s[i] = acc[i]!;
  };
  return { next, jump, state: () => s.map(Number) };
}

function chiSquare(counts: number[], expected: number[]): number {
  return counts.reduce(
    (sum, count, index) => sum + (count - expected[index]!) ** 2 / expected[index]!,
    0,
  );
}

describe('createRng', () => {
  it('should reproduce hand-computed xoshiro128** outputs for state [1, 2, 3, 4]', () => {
    const rng = createRng([1, 2, 3, 4]);
    // rotl(2*5, 7) * 9 = 1280 * 9; after one step s1 becomes 0, so the next output is 0.
    expect(rng.nextUint32()).toBe(11520);
    expect(rng.nextUint32()).toBe(0);
  });

  it('should match an independent BigInt reference for 1000 outputs and across split()', () => {
    const start: [number, number, number, number] = [
      0x12345678, 0x9abcdef0, 0x0fedcba9, 0x87654321,
    ];
    const rng = createRng(start);
    const reference = referenceXoshiro(start);
    for (let i = 0; i < 1000; i++) expect(rng.nextUint32()).toBe(reference.next());
    const child = rng.split();
    const childReference = referenceXoshiro(reference.state() as [number, number, number, number]);
    reference.jump();
    expect(rng.getState()).toEqual(reference.state());
    for (let i = 0; i < 100; i++) {
      expect(child.nextUint32()).toBe(childReference.next());
      expect(rng.nextUint32()).toBe(reference.next());
    }
  });

  it('should give the same stream for the same seed and different streams for different seeds', () => {
    const draw = (seed: number | string) => {
      const rng = createRng(seed);
      return Array.from({ length: 8 }, () => rng.nextUint32());
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw('run-a')).toEqual(draw('run-a'));
    expect(draw(42)).not.toEqual(draw(43));
    expect(draw(0)).not.toEqual(draw(2 ** 32)); // high bits matter
    expect(draw(-1)).not.toEqual(draw(1));
    expect(draw('a')).not.toEqual(draw('b'));
  });

  it('should resume exactly from a saved state', () => {
    const rng = createRng(7);
    for (let i = 0; i < 10; i++) rng.next();
    const saved = rng.getState();
    const expected = Array.from({ length: 5 }, () => rng.next());
    const resumed = createRng(saved);
    expect(Array.from({ length: 5 }, () => resumed.next())).toEqual(expected);
  });

  it('should derive children independent of processing order, without advancing the parent', () => {
    const a = createRng(1);
    const before = a.getState();
    const childFirst = a.derive('prompt-1').nextUint32();
    a.derive('prompt-0');
    expect(a.getState()).toEqual(before);
    expect(a.derive('prompt-1').nextUint32()).toBe(childFirst);
    expect(a.derive('prompt-0').nextUint32()).not.toBe(childFirst);
    expect(a.derive(3).nextUint32()).toBe(createRng(1).derive(3).nextUint32());
  });

  it('should draw uniform floats in [0, 1) and unbiased integers (chi-square)', () => {
    const rng = createRng(2024);
    const bins = new Array<number>(10).fill(0);
    let min = 1;
    let max = 0;
    for (let i = 0; i < 50_000; i++) {
      const x = rng.next();
      min = Math.min(min, x);
      max = Math.max(max, x);
      bins[Math.floor(x * 10)]!++;
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    // 9 degrees of freedom: the 99.9% quantile is 27.88.
    expect(chiSquare(bins, new Array(10).fill(5000))).toBeLessThan(27.88);
    const faces = new Array<number>(7).fill(0);
    for (let i = 0; i < 70_000; i++) faces[rng.nextInt(7)]!++;
    // 6 degrees of freedom: 99.9% quantile 22.46.
    expect(chiSquare(faces, new Array(7).fill(10_000))).toBeLessThan(22.46);
  });

  it('should sample categorical frequencies proportional to the weights', () => {
    const rng = createRng(5);
    const weights = [0.5, 0, 2, 1.5];
    const counts = new Array<number>(4).fill(0);
    const draws = 40_000;
    for (let i = 0; i < draws; i++) counts[rng.categorical(weights)]!++;
    expect(counts[1]).toBe(0);
    const nonZero = [0, 2, 3];
    const expected = nonZero.map((index) => (weights[index]! / 4) * draws);
    // 2 degrees of freedom: 99.9% quantile 13.82.
    expect(
      chiSquare(
        nonZero.map((index) => counts[index]!),
        expected,
      ),
    ).toBeLessThan(13.82);
  });

  it('should draw standard normals with mean 0 and variance 1', () => {
    const rng = createRng(11);
    const n = 40_000;
    let sum = 0;
    let squares = 0;
    for (let i = 0; i < n; i++) {
      const z = rng.nextNormal();
      sum += z;
      squares += z * z;
    }
    expect(Math.abs(sum / n)).toBeLessThan(0.02);
    expect(Math.abs(squares / n - 1)).toBeLessThan(0.03);
  });

  it('should shuffle into a permutation, deterministically', () => {
    const shuffled = createRng(3).shuffle([1, 2, 3, 4, 5, 6, 7, 8]);
    expect([...shuffled].sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(createRng(3).shuffle([1, 2, 3, 4, 5, 6, 7, 8])).toEqual(shuffled);
  });

  it('should reject bad seeds and arguments with typed errors', () => {
    expect(() => createRng(1.5)).toThrow(/parameter 'seed' of createRng\(\)/);
    expect(() => createRng([0, 0, 0, 0])).toThrow(InvalidArgumentError);
    expect(() => createRng(Number.NaN)).toThrow(/got NaN/);
    const rng = createRng(1);
    expect(() => rng.nextInt(0)).toThrow(/maxExclusive/);
    expect(() => rng.derive(1.5)).toThrow(/parameter 'label' of Rng.derive/);
    expect(() => rng.categorical([0, 0])).toThrow(/positive sum/);
    expect(() => rng.categorical([1, -1])).toThrow(/weights\[1\]/);
    expect(() => rng.categorical([1, Number.NaN])).toThrow(/NON_FINITE|finite/);
  });
});
