/**
 * Test helpers comparing the native engine with the tfjs engine on the same steps: the GRPO
 * steps' metrics (first update within 1e-5, later ones within 1e-3) and the trained weights.
 * @internal
 */
import type { Checkpoint } from '@rlvr/model';
import { expect } from 'vitest';
import type { LlamaModel } from '../model/llama-model.js';
import type { PolicyTrainer } from '../train/policy-trainer.js';
import type { GrpoBatch, GrpoStepOptions } from '../train/trainer-types.js';

/** A model and its trainer, on one engine. */
export type EngineRun = { model: LlamaModel; policy: PolicyTrainer };

/** The checkpoint's tensors by name. */
export const weightsOf = (checkpoint: Checkpoint): Map<string, Float32Array> =>
  new Map(checkpoint.tensors.map((tensor) => [tensor.name, tensor.data]));

/** The largest absolute difference between two sets of tensors of the same names. */
export function worstDifference(
  a: Map<string, Float32Array>,
  b: Map<string, Float32Array>,
): number {
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  let worst = 0;
  for (const [name, data] of a) {
    const other = b.get(name)!;
    for (let i = 0; i < data.length; i++) worst = Math.max(worst, Math.abs(data[i]! - other[i]!));
  }
  return worst;
}

/**
 * Runs `grpoStep(batch, step)` `calls` times on both engines and expects the same metrics per
 * update; returns the reference's summed clip and off-policy-masked fractions (so a case can
 * check that its term was exercised).
 */
export function expectSameGrpoSteps(
  reference: EngineRun,
  native: EngineRun,
  batch: GrpoBatch,
  step: GrpoStepOptions | undefined,
  calls = 2,
): { clipped: number; masked: number } {
  let clipped = 0;
  let masked = 0;
  for (let call = 0; call < calls; call++) {
    const want = reference.policy.grpoStep(batch, step).steps;
    const got = native.policy.grpoStep(batch, step).steps;
    expect(got.length).toBe(want.length);
    got.forEach((metrics, index) => {
      const expected = want[index]!;
      expect(metrics.skipped).toBe(false);
      const bound = call === 0 && index === 0 ? 1e-5 : 1e-3;
      for (const key of ['loss', 'policyLoss', 'kl', 'entropy', 'ratioMean'] as const) {
        expect(Math.abs(metrics[key] - expected[key]), key).toBeLessThan(bound);
      }
      expect(Math.abs(metrics.gradNorm - expected.gradNorm) / expected.gradNorm).toBeLessThan(
        bound,
      );
      expect(metrics.clipFraction).toBe(expected.clipFraction);
      expect(metrics.offPolicyMaskedFraction).toBe(expected.offPolicyMaskedFraction);
      clipped += expected.clipFraction;
      masked += expected.offPolicyMaskedFraction;
    });
  }
  return { clipped, masked };
}

/** Both engines' trained weights agree (1e-3) and moved from `initial` (more than 1e-2). */
export function expectSameTrainedWeights(
  reference: EngineRun,
  native: EngineRun,
  initial: Checkpoint,
): void {
  const trained = weightsOf(reference.model.toCheckpoint());
  expect(worstDifference(weightsOf(native.model.toCheckpoint()), trained)).toBeLessThan(1e-3);
  expect(worstDifference(trained, weightsOf(initial))).toBeGreaterThan(1e-2);
}
