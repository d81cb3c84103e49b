import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { validateFiniteArray, validateInteger } from '../validation/validate.js';

/** The full state of an {@link Rng}: four 32-bit words. Save it to resume a run exactly. */
export type RngState = readonly [number, number, number, number];

/**
 * A seeded, splittable pseudo-random generator (xoshiro128**, period 2^128 − 1), used by every
 * stochastic part of rlvr. Not for cryptography.
 */
export interface Rng {
  /** Next 32-bit unsigned integer. */
  nextUint32(): number;
  /** Uniform float in [0, 1) with 53 random bits. */
  next(): number;
  /** Uniform integer in [0, maxExclusive), without modulo bias; `maxExclusive` ≤ 2^32. */
  nextInt(maxExclusive: number): number;
  /** Standard normal sample (Box–Muller). */
  nextNormal(): number;
  /** Index drawn with probability proportional to `weights[i]` (non-negative, not all zero). */
  categorical(weights: ArrayLike<number>): number;
  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<T>(items: T[]): T[];
  /**
   * A child generator whose stream does not overlap this one: the child takes the current state and
   * this generator jumps 2^64 draws ahead. Successive splits give disjoint streams.
   */
  split(): Rng;
  /**
   * A child generator derived from the current state and `label`, without advancing this one:
   * `rng.derive('prompt-7')` is the same stream whatever order prompts are processed in.
   */
  derive(label: string | number): Rng;
  /** Snapshot of the state (copy). */
  getState(): RngState;
}

const JUMP = [0x8764000b, 0xf542d2d3, 0x6fa035c3, 0x77f2db5b] as const;
const TWO_POW_32 = 4294967296;

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** SplitMix32 step: a well-mixed 32-bit output of a 32-bit input. */
function splitmix32(value: number): number {
  let t = (value + 0x9e3779b9) | 0;
  t ^= t >>> 16;
  t = Math.imul(t, 0x21f0aaad);
  t ^= t >>> 15;
  t = Math.imul(t, 0x735a2d97);
  t ^= t >>> 15;
  return t >>> 0;
}

/** Hashes a string to 32 bits (FNV-1a over UTF-16 code units, then SplitMix32). */
function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return splitmix32(hash >>> 0);
}

function stateFromWords(a: number, b: number): [number, number, number, number] {
  let x = splitmix32(a ^ 0x5bd1e995);
  const words: number[] = [];
  for (let index = 0; index < 4; index++) {
    x = splitmix32((x + Math.imul(b ^ index, 0x27d4eb2d)) | 0);
    words.push(x);
  }
  const state = words as [number, number, number, number];
  if ((state[0] | state[1] | state[2] | state[3]) === 0) state[0] = 1;
  return state;
}

class Xoshiro128StarStar implements Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(state: RngState) {
    [this.s0, this.s1, this.s2, this.s3] = state;
  }

  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  next(): number {
    const high = this.nextUint32() >>> 5; // 27 bits
    const low = this.nextUint32() >>> 6; // 26 bits
    return (high * 67108864 + low) / 9007199254740992;
  }

  nextInt(maxExclusive: number): number {
    validateInteger(maxExclusive, {
      parameter: 'maxExclusive',
      functionName: 'Rng.nextInt',
      min: 1,
      max: TWO_POW_32,
    });
    const limit = TWO_POW_32 - (TWO_POW_32 % maxExclusive);
    let value = this.nextUint32();
    while (value >= limit) value = this.nextUint32();
    return value % maxExclusive;
  }

  nextNormal(): number {
    let u = this.next();
    while (u === 0) u = this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  categorical(weights: ArrayLike<number>): number {
    validateFiniteArray(weights, { parameter: 'weights', functionName: 'Rng.categorical' });
    let total = 0;
    for (let index = 0; index < weights.length; index++) {
      const weight = weights[index]!;
      if (weight < 0) {
        throw new InvalidArgumentError({
          parameter: `weights[${index}]`,
          functionName: 'Rng.categorical',
          value: weight,
          expected: 'a non-negative weight',
        });
      }
      total += weight;
    }
    if (!(total > 0)) {
      throw new InvalidArgumentError({
        parameter: 'weights',
        functionName: 'Rng.categorical',
        value: weights,
        expected: 'weights with a positive sum',
      });
    }
    const target = this.next() * total;
    let cumulative = 0;
    let last = 0;
    for (let index = 0; index < weights.length; index++) {
      const weight = weights[index]!;
      if (weight <= 0) continue;
      cumulative += weight;
      last = index;
      if (target < cumulative) return index;
    }
    return last; // rounding: target fell at the very end
  }

  shuffle<T>(items: T[]): T[] {
    for (let index = items.length - 1; index > 0; index--) {
      const other = this.nextInt(index + 1);
      const held = items[index] as T;
      items[index] = items[other] as T;
      items[other] = held;
    }
    return items;
  }

  split(): Rng {
    const child = new Xoshiro128StarStar(this.getState());
    this.jump();
    return child;
  }

  derive(label: string | number): Rng {
    if (typeof label === 'number') {
      validateInteger(label, { parameter: 'label', functionName: 'Rng.derive' });
    } else if (typeof label !== 'string') {
      throw new InvalidArgumentError({
        parameter: 'label',
        functionName: 'Rng.derive',
        value: label,
        expected: 'a string or an integer',
      });
    }
    const labelHash =
      typeof label === 'number'
        ? splitmix32(label | 0) ^ splitmix32(Math.floor(label / TWO_POW_32))
        : hashString(label);
    const a = splitmix32(this.s0 ^ labelHash) ^ this.s2;
    const b = splitmix32(this.s1 ^ rotl(labelHash, 16)) ^ this.s3;
    return new Xoshiro128StarStar(stateFromWords(a >>> 0, b >>> 0));
  }

  getState(): RngState {
    return [this.s0, this.s1, this.s2, this.s3];
  }

  /** Advances the state by 2^64 draws. */
  private jump(): void {
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    for (const word of JUMP) {
      for (let bit = 0; bit < 32; bit++) {
        if ((word >>> bit) & 1) {
          s0 ^= this.s0;
          s1 ^= this.s1;
          s2 ^= this.s2;
          s3 ^= this.s3;
        }
        this.nextUint32();
      }
    }
    this.s0 = s0 >>> 0;
    this.s1 = s1 >>> 0;
    this.s2 = s2 >>> 0;
    this.s3 = s3 >>> 0;
  }
}

/**
 * Creates a seeded generator. A number seed (any safe integer) or a string seed gives a fixed
 * stream; a saved {@link RngState} resumes exactly where it was taken.
 *
 * @example
 * ```ts
 * const rng = createRng(42);
 * const x = rng.next();               // same value on every run
 * const perPrompt = rng.derive('p-7'); // independent of processing order
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for a non-integer seed or an all-zero state.
 */
export function createRng(seed: number | string | RngState): Rng {
  if (typeof seed === 'number') {
    validateInteger(seed, { parameter: 'seed', functionName: 'createRng' });
    const low = seed >>> 0;
    const high = Math.floor(seed / TWO_POW_32) >>> 0;
    return new Xoshiro128StarStar(stateFromWords(low, high));
  }
  if (typeof seed === 'string') {
    return new Xoshiro128StarStar(stateFromWords(hashString(seed), hashString(`${seed}\u0000`)));
  }
  if (
    Array.isArray(seed) &&
    seed.length === 4 &&
    seed.every((word) => Number.isInteger(word) && word >= 0 && word < TWO_POW_32) &&
    seed.some((word) => word !== 0)
  ) {
    return new Xoshiro128StarStar(seed);
  }
  throw new InvalidArgumentError({
    parameter: 'seed',
    functionName: 'createRng',
    value: seed,
    expected: 'an integer, a string, or a saved state of four uint32 words (not all zero)',
  });
}
