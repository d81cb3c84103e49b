import { describe, expect, it } from 'vitest';
import { runTabularGrpo } from './tabular-grpo.js';

describe('runTabularGrpo', () => {
  it('should raise pass@1 from chance to well above it with GRPO, deterministically', () => {
    const first = runTabularGrpo({ seed: 1 });
    expect(first.before.passAt1).toBeLessThan(0.05); // chance is 1/100
    expect(first.after.passAt1).toBeGreaterThan(0.6);
    expect(first.after.majAt8).toBeGreaterThan(first.after.passAt1); // voting helps
    expect(first.history.at(-1)!.rewardMean).toBeGreaterThan(first.history[0]!.rewardMean);
    const second = runTabularGrpo({ seed: 1 });
    expect(second.after).toEqual(first.after);
  });
});
