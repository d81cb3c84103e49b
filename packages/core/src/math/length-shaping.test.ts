import { describe, expect, it } from 'vitest';
import {
  groupLengthPenalty,
  lengthBudgetPenalty,
  maskTruncatedCompletions,
  softOverlongPenalty,
} from './length-shaping.js';

describe('softOverlongPenalty', () => {
  const options = { maxLength: 1024, bufferLength: 256 };
  it('should be 0, then linear, then −penaltyFactor (DAPO)', () => {
    expect(softOverlongPenalty(0, options)).toBe(0);
    expect(softOverlongPenalty(768, options)).toBe(0);
    expect(softOverlongPenalty(900, options)).toBe(-(900 - 768) / 256);
    expect(softOverlongPenalty(1024, options)).toBe(-1);
    expect(softOverlongPenalty(5000, options)).toBe(-1);
    expect(softOverlongPenalty(896, { ...options, penaltyFactor: 0.5 })).toBe(-0.25);
  });
  it('should reject bad input', () => {
    expect(() => softOverlongPenalty(-1, options)).toThrow(/'length'/);
    expect(() => softOverlongPenalty(1, { maxLength: 10, bufferLength: 20 })).toThrow(
      /options.bufferLength/,
    );
  });
});

describe('maskTruncatedCompletions', () => {
  it('should zero the mask of completions that hit the length cap', () => {
    expect(maskTruncatedCompletions([[1, 1], [1, 0, 1], [1]], ['stop', 'length', 'abort'])).toEqual(
      [[1, 1], [0, 0, 0], [1]],
    );
  });
  it("should mask a completion cut by a confidence stop ('confidence') like a truncated one", () => {
    expect(
      maskTruncatedCompletions(
        [
          [1, 1],
          [1, 1],
        ],
        ['confidence', 'stop'],
      ),
    ).toEqual([
      [0, 0],
      [1, 1],
    ]);
  });
  it('should reject mismatched finish reasons', () => {
    expect(() => maskTruncatedCompletions([[1]], [])).toThrow(/finishReasons/);
    expect(() => maskTruncatedCompletions([[1]], ['eos' as 'stop'])).toThrow(/finishReasons\[0\]/);
  });
});

describe('groupLengthPenalty', () => {
  it("should follow Kimi k1.5's formula", () => {
    // lengths 10, 20, 30: λ = 0.5, 0, −0.5
    expect(groupLengthPenalty([10, 20, 30], [true, true, true])).toEqual([0.5, 0, -0.5]);
    expect(groupLengthPenalty([10, 20, 30], [false, false, false])).toEqual([0, 0, -0.5]);
    expect(groupLengthPenalty([7, 7], [true, false])).toEqual([0, 0]);
  });
  it('should reject mismatched arrays', () => {
    expect(() => groupLengthPenalty([1, 2], [true])).toThrow(/'correct'/);
  });
});

describe('lengthBudgetPenalty', () => {
  it('should penalize tokens over the budget, or any deviation', () => {
    expect(lengthBudgetPenalty(120, { budget: 100, coefficient: 0.01 })).toBeCloseTo(-0.2, 14);
    expect(lengthBudgetPenalty(80, { budget: 100, coefficient: 0.01 })).toBe(0);
    expect(
      lengthBudgetPenalty(80, { budget: 100, coefficient: 0.01, mode: 'absolute' }),
    ).toBeCloseTo(-0.2, 14);
  });
  it('should reject bad options', () => {
    expect(() => lengthBudgetPenalty(1, { budget: -1, coefficient: 1 })).toThrow(/options.budget/);
  });
});
