import { logSoftmax } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { distillationLoss, generalizedJsd, klDivergence, topKBuckets } from './divergences.js';

const log = (values: number[]) => values.map(Math.log);

describe('klDivergence', () => {
  it('should match hand-computed values', () => {
    // KL([.5,.5] ‖ [.25,.75]) = .5 ln 2 + .5 ln(2/3)
    expect(klDivergence(log([0.5, 0.5]), log([0.25, 0.75]))).toBeCloseTo(
      0.5 * Math.log(2) + 0.5 * Math.log(2 / 3),
      14,
    );
    expect(klDivergence(log([1, 0]), log([0.5, 0.5]))).toBeCloseTo(Math.log(2), 14);
    expect(klDivergence(log([0.3, 0.7]), log([0.3, 0.7]))).toBe(0);
    expect(klDivergence(log([0.5, 0.5]), log([1, 0]))).toBe(Infinity);
  });
});

describe('generalizedJsd', () => {
  const teacher = log([0.5, 0.3, 0.2]);
  const student = log([0.2, 0.2, 0.6]);

  it('should reduce to forward KL at β = 0 and reverse KL at β = 1', () => {
    expect(generalizedJsd(teacher, student, 0)).toBe(klDivergence(teacher, student));
    expect(generalizedJsd(teacher, student, 1)).toBe(klDivergence(student, teacher));
  });

  it('should equal the symmetric JSD by hand at β = 0.5', () => {
    const m = [0.35, 0.25, 0.4];
    const expected = 0.5 * klDivergence(teacher, log(m)) + 0.5 * klDivergence(student, log(m));
    expect(generalizedJsd(teacher, student, 0.5)).toBeCloseTo(expected, 14);
    expect(generalizedJsd(teacher, student, 0.5)).toBeCloseTo(
      generalizedJsd(student, teacher, 0.5),
      14,
    );
  });

  it('should be ≥ 0, 0 for equal inputs, and ≤ ln 2 at β = ½ (property)', () => {
    const logits = fc.array(fc.double({ min: -5, max: 5, noNaN: true }), {
      minLength: 4,
      maxLength: 4,
    });
    fc.assert(
      fc.property(
        logits,
        logits,
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        (a, b, beta) => {
          const p = logSoftmax(a);
          const q = logSoftmax(b);
          expect(generalizedJsd(p, q, beta)).toBeGreaterThanOrEqual(0);
          expect(generalizedJsd(p, p, beta)).toBeCloseTo(0, 12);
          expect(generalizedJsd(p, q, 0.5)).toBeLessThanOrEqual(Math.log(2) + 1e-12);
        },
      ),
    );
  });

  it('should reject β outside [0, 1]', () => {
    expect(() => generalizedJsd(teacher, student, 1.5)).toThrow(/'beta'/);
    expect(() => generalizedJsd(teacher, [0], 0.5)).toThrow(/studentLogprobs/);
  });
});

describe('distillationLoss and topKBuckets', () => {
  it('should compute per-position divergences from logits', () => {
    const teacher = [[2, 0, -1]];
    const student = [[1, 1, 0]];
    const [value] = distillationLoss({ teacher, studentLogits: student, divergence: 'forward-kl' });
    expect(value).toBeCloseTo(klDivergence(logSoftmax(teacher[0]!), logSoftmax(student[0]!)), 14);
    const [hot] = distillationLoss({
      teacher,
      studentLogits: student,
      divergence: 'reverse-kl',
      temperature: 2,
    });
    expect(hot).toBeCloseTo(klDivergence(logSoftmax([0.5, 0.5, 0]), logSoftmax([1, 0, -0.5])), 14);
  });

  it('should put the teacher top-k and the remaining mass into k + 1 buckets', () => {
    const student = log([0.1, 0.2, 0.3, 0.4]);
    const { teacher: t, student: s } = topKBuckets(
      { tokenIds: [3, 0], logprobs: log([0.6, 0.3]) },
      student,
    );
    expect(Array.from(t, Math.exp)).toEqual([0.6, 0.3, 0.1].map((x) => expect.closeTo(x, 12)));
    expect(Array.from(s, Math.exp)).toEqual([0.4, 0.1, 0.5].map((x) => expect.closeTo(x, 12)));
    // With the full teacher as its own top-k, the bucketed divergence is the full one.
    const teacherFull = log([0.25, 0.25, 0.25, 0.25]);
    const [full] = distillationLoss({
      teacher: [[0, 0, 0, 0]],
      studentLogits: [log([0.1, 0.2, 0.3, 0.4])],
      divergence: 'jsd',
      beta: 0.3,
    });
    const [bucketed] = distillationLoss({
      teacher: [{ tokenIds: [0, 1, 2, 3], logprobs: teacherFull }],
      studentLogits: [log([0.1, 0.2, 0.3, 0.4])],
      divergence: 'jsd',
      beta: 0.3,
    });
    expect(bucketed).toBeCloseTo(full!, 10);
  });

  it('should reject mismatched shapes naming the parameter', () => {
    expect(() =>
      distillationLoss({ teacher: [[1, 2]], studentLogits: [[1, 2, 3]], divergence: 'forward-kl' }),
    ).toThrow(/teacher\[0\]/);
    expect(() =>
      distillationLoss({ teacher: [], studentLogits: [[1]], divergence: 'forward-kl' }),
    ).toThrow(/'teacher'/);
    expect(() =>
      distillationLoss({ teacher: [[1]], studentLogits: [[1]], divergence: 'kl' as 'jsd' }),
    ).toThrow(/divergence/);
    expect(() => topKBuckets({ tokenIds: [0, 0], logprobs: [-1, -1] }, [0, -1])).toThrow(
      /distinct/,
    );
  });
});
