import { logSoftmax, softmax } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { distillationLoss } from './divergences.js';
import { distillationLossAndGradient } from './gradients.js';

const logitsArb = fc.array(fc.double({ min: -4, max: 4, noNaN: true }), {
  minLength: 5,
  maxLength: 5,
});

describe('distillationLossAndGradient', () => {
  it('should give softmax(student) − softmax(teacher) for forward KL', () => {
    const { loss, dLogits } = distillationLossAndGradient({
      teacher: [2, 0, -1],
      studentLogits: [1, 1, 0],
      divergence: 'forward-kl',
    });
    const s = softmax([1, 1, 0]);
    const t = softmax([2, 0, -1]);
    Array.from(dLogits).forEach((value, index) => {
      expect(value).toBeCloseTo(s[index]! - t[index]!, 14);
    });
    expect(loss).toBeCloseTo(
      distillationLoss({
        teacher: [[2, 0, -1]],
        studentLogits: [[1, 1, 0]],
        divergence: 'forward-kl',
      })[0]!,
      14,
    );
  });

  it('should match finite differences for every divergence, full and top-k, with temperature (property)', () => {
    fc.assert(
      fc.property(
        logitsArb,
        logitsArb,
        fc.constantFrom('forward-kl', 'reverse-kl', 'jsd'),
        fc.constantFrom(0, 0.3, 1),
        fc.constantFrom(1, 2),
        fc.boolean(),
        (teacherLogits, studentLogits, kind, beta, temperature, useTopK) => {
          const teacher = useTopK
            ? (() => {
                const logprobs = logSoftmax(teacherLogits.map((x) => x / temperature));
                const order = [...logprobs.keys()]
                  .sort((a, b) => logprobs[b]! - logprobs[a]!)
                  .slice(0, 3);
                return { tokenIds: order, logprobs: order.map((id) => logprobs[id]!) };
              })()
            : teacherLogits;
          const options = { teacher, divergence: kind as 'jsd', beta, temperature };
          const { dLogits } = distillationLossAndGradient({ ...options, studentLogits });
          const h = 1e-6;
          studentLogits.forEach((_, index) => {
            const plus = [...studentLogits];
            const minus = [...studentLogits];
            plus[index]! += h;
            minus[index]! -= h;
            const numeric =
              (distillationLossAndGradient({ ...options, studentLogits: plus }).loss -
                distillationLossAndGradient({ ...options, studentLogits: minus }).loss) /
              (2 * h);
            expect(dLogits[index]).toBeCloseTo(numeric, 5);
          });
        },
      ),
      { numRuns: 80 },
    );
  });
});
