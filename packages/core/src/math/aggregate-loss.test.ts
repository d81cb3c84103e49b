import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregateLoss, aggregationWeights, LOSS_AGGREGATIONS } from './aggregate-loss.js';

/** A ragged batch of losses with a 0/1 mask of the same shape. */
const batchArb = fc
  .array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 8 })
  .chain((lengths) =>
    fc.record({
      losses: fc.tuple(
        ...lengths.map((length) =>
          fc.array(fc.double({ min: -5, max: 5, noNaN: true }), {
            minLength: length,
            maxLength: length,
          }),
        ),
      ),
      mask: fc.tuple(
        ...lengths.map((length) =>
          fc.array(fc.constantFrom(0, 1, 1, 1), { minLength: length, maxLength: length }),
        ),
      ),
    }),
  );

describe('aggregateLoss', () => {
  const perToken = [[1, 2, 3], [4]];

  it('should compute every mode by hand', () => {
    expect(aggregateLoss(perToken, null, 'seq-mean-token-mean')).toBe(3); // (2 + 4) / 2
    expect(aggregateLoss(perToken, null, 'token-mean')).toBe(2.5); // 10 / 4
    expect(aggregateLoss(perToken, null, 'seq-mean-token-sum')).toBe(5); // (6 + 4) / 2
    expect(aggregateLoss(perToken, null, 'seq-mean-token-sum-norm', { normalizer: 4 })).toBe(1.25);
  });

  it('should honour the mask', () => {
    const mask = [[1, 0, 1], [0]];
    expect(aggregateLoss(perToken, mask, 'seq-mean-token-mean')).toBe(2); // only sequence 0: (1+3)/2
    expect(aggregateLoss(perToken, mask, 'token-mean')).toBe(2);
    expect(aggregateLoss(perToken, [[0, 0, 0], [0]], 'token-mean')).toBe(0); // never NaN
    expect(aggregateLoss(perToken, [[0, 0, 0], [0]], 'seq-mean-token-mean')).toBe(0);
  });

  it('should equal the original GRPO per-sequence average for seq-mean-token-mean (property)', () => {
    fc.assert(
      fc.property(batchArb, ({ losses }) => {
        const grpo =
          losses.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0) / row.length, 0) /
          losses.length;
        expect(aggregateLoss(losses, null, 'seq-mean-token-mean')).toBeCloseTo(grpo, 10);
      }),
    );
  });

  it('should make token-mean equal global sum / global count for any micro-batch split (property)', () => {
    fc.assert(
      fc.property(batchArb, fc.integer({ min: 1, max: 8 }), ({ losses, mask }, cut) => {
        const split = Math.min(cut, losses.length);
        let sum = 0;
        let count = 0;
        losses.forEach((row, s) => {
          row.forEach((value, t) => {
            sum += value * mask[s]![t]!;
            count += mask[s]![t]!;
          });
        });
        const full = aggregateLoss(losses, mask, 'token-mean');
        expect(full).toBeCloseTo(count > 0 ? sum / count : 0, 10);
        fc.pre(count > 0);
        const parts = [
          [losses.slice(0, split), mask.slice(0, split)],
          [losses.slice(split), mask.slice(split)],
        ] as const;
        const accumulated = parts.reduce(
          (total, [partLosses, partMask]) =>
            total +
            (partLosses.length
              ? aggregateLoss(partLosses, partMask, 'token-mean', { tokenCount: count })
              : 0),
          0,
        );
        expect(accumulated).toBeCloseTo(full, 10);
      }),
    );
  });

  it('should make every seq-* mode invariant to the micro-batch split given the global sequence count (property)', () => {
    fc.assert(
      fc.property(
        batchArb,
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom('seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'),
        ({ losses, mask }, cut, mode) => {
          const active = mask.filter((row) => row.some((m) => m > 0)).length;
          fc.pre(active > 0);
          const options = { sequenceCount: active, normalizer: 7 };
          const full = aggregateLoss(losses, mask, mode as 'token-mean', { normalizer: 7 });
          const split = Math.min(cut, losses.length);
          const first = aggregateLoss(
            losses.slice(0, split),
            mask.slice(0, split),
            mode as 'token-mean',
            options,
          );
          const second =
            split < losses.length
              ? aggregateLoss(losses.slice(split), mask.slice(split), mode as 'token-mean', options)
              : 0;
          expect(first + second).toBeCloseTo(full, 10);
        },
      ),
    );
  });

  it('should give weights whose weighted sum is the loss', () => {
    for (const mode of LOSS_AGGREGATIONS) {
      const weights = aggregationWeights([[1, 1, 0], [1]], mode, { normalizer: 3 });
      const viaWeights = weights.reduce(
        (sum, row, s) => sum + row.reduce((acc, w, t) => acc + w * perToken[s]![t]!, 0),
        0,
      );
      expect(aggregateLoss(perToken, [[1, 1, 0], [1]], mode, { normalizer: 3 })).toBeCloseTo(
        viaWeights,
        14,
      );
    }
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => aggregateLoss(perToken, null, 'seq-mean-token-sum-norm')).toThrow(
      /options.normalizer/,
    );
    expect(() => aggregateLoss(perToken, null, 'mean' as 'token-mean')).toThrow(/'mode'/);
    expect(() => aggregateLoss(perToken, [[1, 1], [1]], 'token-mean')).toThrow(/mask\[0\]/);
    expect(() => aggregateLoss(perToken, [[1, -1, 1], [1]], 'token-mean')).toThrow(
      /mask\[0\]\[1\]/,
    );
    expect(() => aggregateLoss([[Number.NaN]], null, 'token-mean')).toThrow(/perToken/);
    expect(() => aggregateLoss(perToken, null, 'token-mean', { tokenCount: 0 })).toThrow(
      /options.tokenCount/,
    );
  });
});
