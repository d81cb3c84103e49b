import { describe, expect, it } from 'vitest';
import { learningRateAt } from './schedule.js';

describe('learningRateAt', () => {
  it('should warm up linearly then follow the schedule', () => {
    const cosine = {
      learningRate: 1e-3,
      schedule: 'cosine' as const,
      warmupSteps: 10,
      totalSteps: 110,
    };
    expect(learningRateAt(cosine, 0)).toBe(0);
    expect(learningRateAt(cosine, 5)).toBeCloseTo(5e-4, 12);
    expect(learningRateAt(cosine, 10)).toBeCloseTo(1e-3, 12);
    expect(learningRateAt(cosine, 60)).toBeCloseTo(5e-4, 12);
    expect(learningRateAt(cosine, 110)).toBeCloseTo(0, 12);
    expect(learningRateAt(cosine, 500)).toBeCloseTo(0, 12);
    expect(learningRateAt({ ...cosine, minLearningRateRatio: 0.1 }, 110)).toBeCloseTo(1e-4, 12);
    expect(learningRateAt({ learningRate: 2e-4 }, 1000)).toBe(2e-4);
    expect(learningRateAt({ learningRate: 1, schedule: 'linear', totalSteps: 4 }, 1)).toBe(0.75);
  });

  it('should name the offending field', () => {
    expect(() => learningRateAt({ learningRate: 1, schedule: 'cosine' }, 0)).toThrow(/totalSteps/);
    expect(() => learningRateAt({ learningRate: -1 }, 0)).toThrow(/learningRate/);
    expect(() => learningRateAt({ learningRate: 1 }, 1.5)).toThrow(/step/);
  });
});
