import { describe, expect, it } from 'vitest';
import { compareOnSimulatedQuestions } from '../testing/simulated-questions.js';

describe('DeepConf vs majority and ESC (simulated traces, same trace sequence per method)', () => {
  it('should keep online DeepConf-low at least as accurate as majority with far fewer tokens', async () => {
    // A regression check of the whole pipeline under the bench's assumptions, at a quarter of its
    // trace lengths: if confidence weighting, filtering or the stop broke, these would not hold.
    const questions = 24;
    const rows = await compareOnSimulatedQuestions({
      questions,
      seed: 1,
      budget: 32,
      warmup: 8,
      windowSize: 16,
      lengthScale: 0.25,
    });
    const by = (prefix: string) => rows.find((row) => row.method.startsWith(prefix))!;
    const majority = by('majority@32');
    const esc = by('ESC');
    const low = by('online DeepConf-low');
    const offline = by('offline DeepConf bottom-10, eta 10');
    expect(esc.tokens).toBeLessThanOrEqual(majority.tokens);
    expect(offline.correct).toBeGreaterThanOrEqual(majority.correct);
    expect(low.correct).toBeGreaterThanOrEqual(majority.correct);
    expect(low.tokens).toBeLessThan(0.6 * majority.tokens);
    expect(low.stoppedEarly).toBeGreaterThan(0);
  });
});
