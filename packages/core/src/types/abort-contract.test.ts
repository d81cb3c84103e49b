import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/aborted-error.js';
import { mismatchCorrection } from '../math/mismatch.js';
import { isAbortedGroup, throwIfAborted } from './sampler.js';

describe('throwIfAborted', () => {
  it('should throw AbortedError with the reason only when aborted', () => {
    expect(() => throwIfAborted(undefined, 'op')).not.toThrow();
    const controller = new AbortController();
    expect(() => throwIfAborted(controller.signal, 'op')).not.toThrow();
    controller.abort('stop');
    try {
      throwIfAborted(controller.signal, 'op');
      expect.unreachable();
    } catch (error) {
      expect(AbortedError.isInstance(error)).toBe(true);
      expect((error as AbortedError).cause).toBe('stop');
    }
  });
});

describe('isAbortedGroup', () => {
  it('should mark a group with any aborted completion', () => {
    expect(isAbortedGroup([{ finishReason: 'stop' }, { finishReason: 'length' }])).toBe(false);
    expect(isAbortedGroup([{ finishReason: 'stop' }, { finishReason: 'abort' }])).toBe(true);
  });
});

describe('importance ratio under truncation (the Sampler logprob contract)', () => {
  it('should equal the kept mass when behaviour logprobs come from the top-k distribution', () => {
    // Logits of one step, temperature 0.5, top-k 2; the token drawn is index 0.
    const logits = [2, 1, 0.5, -1];
    const temperature = 0.5;
    const scaled = logits.map((l) => l / temperature);
    const logZ = Math.log(scaled.reduce((s, v) => s + Math.exp(v), 0));
    const trainer = scaled[0]! - logZ; // log softmax(logits / T), whole vocabulary
    const keptZ = Math.log(Math.exp(scaled[0]!) + Math.exp(scaled[1]!));
    const behaviour = scaled[0]! - keptZ; // renormalized over the two kept tokens
    const keptMass = (Math.exp(scaled[0]!) + Math.exp(scaled[1]!)) / Math.exp(logZ);
    // Hand-worked: e^4 + e^2 over e^4 + e^2 + e^1 + e^-2.
    expect(keptMass).toBeCloseTo(
      (Math.E ** 4 + Math.E ** 2) / (Math.E ** 4 + Math.E ** 2 + Math.E + Math.E ** -2),
      12,
    );
    const { weights, metrics } = mismatchCorrection({
      trainerLogprobs: [[trainer]],
      behaviourLogprobs: [[behaviour]],
      mode: 'token-truncate',
      cap: 10,
    });
    expect(weights[0]![0]).toBeCloseTo(keptMass, 12);
    expect(metrics.isRatioMax).toBeLessThanOrEqual(1);
  });
});
