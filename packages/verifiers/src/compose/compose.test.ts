import { describe, expect, it } from 'vitest';
import { r1FormatReward } from '../format/reward.js';
import { createMathVerifier, mathReward } from '../math/reward.js';
import { combineRewards } from './combine-rewards.js';
import { lengthPenaltyReward, repetitionPenaltyReward, verifierReward } from './penalties.js';

describe('combineRewards', () => {
  it('should weight rewards, skip nulls and await async rewards', async () => {
    const combined = combineRewards({
      rewards: [
        { name: 'a', fn: () => 1, weight: 2 },
        { name: 'b', fn: async () => 0.5, weight: 0.5 },
        { name: 'c', fn: () => null },
      ],
    });
    const score = await combined.score({ prompt: 'p', completion: 'c' });
    expect(score.total).toBeCloseTo(2 * 1 + 0.5 * 0.5, 12);
    expect(score.rewards).toEqual({ a: 1, b: 0.5, c: null });
    expect(Object.keys(score.timings)).toEqual(['a', 'b', 'c']);
    expect(await combined.reward({ prompt: 'p', completion: 'c' })).toBeCloseTo(2.25, 12);
  });

  it("should renormalize over applicable rewards in 'mean' mode and give null when none applies", async () => {
    const mean = combineRewards({
      mode: 'mean',
      rewards: [
        { name: 'a', fn: () => 1, weight: 3 },
        { name: 'b', fn: () => null, weight: 1 },
        { name: 'c', fn: () => 0, weight: 1 },
      ],
    });
    expect((await mean.score({ prompt: '', completion: '' })).total).toBeCloseTo(3 / 4, 12);
    const none = combineRewards({ rewards: [{ name: 'a', fn: () => null }] });
    expect((await none.score({ prompt: '', completion: '' })).total).toBeNull();
  });

  it('should keep per-reward metrics', async () => {
    let call = 0;
    const values = [1, 0, 1, null];
    const combined = combineRewards({ rewards: [{ name: 'acc', fn: () => values[call++ % 4]! }] });
    await combined.scoreBatch(Array.from({ length: 4 }, () => ({ prompt: '', completion: '' })));
    const [metrics] = combined.metrics();
    expect(metrics).toMatchObject({ name: 'acc', count: 4, nullCount: 1, min: 0, max: 1 });
    expect(metrics!.mean).toBeCloseTo(2 / 3, 12);
    expect(metrics!.std).toBeCloseTo(Math.sqrt(2 / 9), 12); // population std of [1, 0, 1]
    combined.resetMetrics();
    expect(combined.metrics()[0]).toMatchObject({ count: 0, mean: null });
  });

  it('should reject bad configuration and non-finite rewards', async () => {
    expect(() => combineRewards({ rewards: [] })).toThrow(/'options.rewards'/);
    expect(() =>
      combineRewards({
        rewards: [
          { name: 'a', fn: () => 1 },
          { name: 'a', fn: () => 1 },
        ],
      }),
    ).toThrow(/'options.rewards\[1\]\.name'/);
    expect(() =>
      combineRewards({ rewards: [{ name: 'a', fn: () => 1, weight: Number.NaN }] }),
    ).toThrow(/weight/);
    const bad = combineRewards({ rewards: [{ name: 'nan', fn: () => Number.NaN }] });
    await expect(bad.score({ prompt: '', completion: '' })).rejects.toMatchObject({
      code: 'NON_FINITE',
    });
  });

  it('should combine real verifiers (accuracy + format)', async () => {
    const combined = combineRewards({
      rewards: [
        { name: 'accuracy', fn: mathReward() },
        { name: 'format', fn: r1FormatReward(), weight: 0.5 },
      ],
    });
    const good = await combined.score({
      prompt: 'q',
      completion: '<think>6*7</think><answer>42</answer>',
      answer: '42',
    });
    expect(good).toMatchObject({ total: 1.5, rewards: { accuracy: 1, format: 1 } });
    const noGold = await combined.score({
      prompt: 'q',
      completion: '<think>x</think><answer>42</answer>',
    });
    expect(noGold.rewards.accuracy).toBeNull();
  });
});

describe('penalties', () => {
  it('should apply DAPO soft overlong punishment', () => {
    const penalty = lengthPenaltyReward({ maxLength: 1024, bufferLength: 256 });
    expect(penalty({ prompt: '', completion: '', completionTokens: 700 })).toBe(0);
    expect(penalty({ prompt: '', completion: '', completionTokens: 900 })).toBeCloseTo(
      -(900 - 768) / 256,
      12,
    );
    expect(penalty({ prompt: '', completion: '', completionTokens: 5000 })).toBe(-1);
    expect(() => penalty({ prompt: '', completion: 'x' })).toThrow(/'input.completionTokens'/);
    const byChars = lengthPenaltyReward({
      maxLength: 10,
      bufferLength: 5,
      fallback: 'characters',
      charsPerToken: 1,
    });
    expect(byChars({ prompt: '', completion: 'x'.repeat(10) })).toBe(-1);
  });

  it('should penalize repeated n-grams as open-r1 does', () => {
    const penalty = repetitionPenaltyReward({ ngramSize: 2, maxPenalty: -1 });
    expect(penalty({ prompt: '', completion: 'a b a b a b' })).toBeCloseTo(-(1 - 2 / 5), 12);
    expect(penalty({ prompt: '', completion: 'the quick brown fox' })).toBe(0);
    expect(penalty({ prompt: '', completion: 'short' })).toBe(0);
    expect(() => repetitionPenaltyReward({ maxPenalty: 1 })).toThrow(/'options.maxPenalty'/);
  });

  it('should adapt any verifier to a reward', async () => {
    const reward = verifierReward(createMathVerifier());
    expect(await reward({ prompt: '', completion: '\\boxed{7}', answer: 7 })).toBe(1);
    expect(await reward({ prompt: '', completion: '\\boxed{7}' })).toBeNull();
  });
});
