import { logSoftmax } from '@rlvr/core';
import {
  type DistillDivergence,
  divergence,
  type TopKLogprobs,
  topKBuckets,
} from './divergences.js';
import { DISTILL_LOSS_DEFAULTS } from './loss-defaults.js';

/** Loss and d loss / d student logits for one position. */
export type LossAndGradient = { loss: number; dLogits: Float64Array };

/**
 * d divergence / d student-distribution entries (g = dL/ds), in closed forms that avoid dividing
 * by tiny probabilities where possible. `teacher` and `student` are log-probabilities over the
 * same support (full vocabulary or top-k buckets). @internal
 */
function gradientWrtDistribution(
  kind: DistillDivergence,
  teacher: ArrayLike<number>,
  student: ArrayLike<number>,
  beta: number,
): Float64Array {
  const size = teacher.length;
  const g = new Float64Array(size);
  const effective =
    kind === 'jsd' && beta === 0
      ? 'forward-kl'
      : kind === 'jsd' && beta === 1
        ? 'reverse-kl'
        : kind;
  for (let index = 0; index < size; index++) {
    const t = teacher[index]!;
    const s = student[index]!;
    if (effective === 'forward-kl') {
      // d/ds Σ p_t (log p_t − log s) = −p_t / s
      g[index] = t === -Infinity ? 0 : -Math.exp(t - s);
    } else if (effective === 'reverse-kl') {
      // d/ds Σ s (log s − log p_t) = log s − log p_t + 1 (the +1 cancels in the softmax Jacobian)
      g[index] = s === -Infinity ? 0 : s - t;
    } else {
      // JSD: β KL(T‖M) + (1−β) KL(S‖M), M = βT + (1−β)S → dL/ds = (1−β) log(s/m)
      const a = t + Math.log(beta);
      const b = s + Math.log(1 - beta);
      const max = Math.max(a, b);
      const logM =
        max === -Infinity ? -Infinity : max + Math.log(Math.exp(a - max) + Math.exp(b - max));
      g[index] = s === -Infinity ? 0 : (1 - beta) * (s - logM);
    }
  }
  return g;
}

/**
 * A distillation divergence at one position and its exact gradient with respect to the student's
 * logits (float64), for a full teacher distribution (logits) or the teacher's cached top-k
 * (k + 1 buckets, see `topKBuckets`). With temperature τ both sides are softened by τ and the
 * gradient includes the 1/τ of the chain rule (no τ² rescaling).
 *
 * @example
 * ```ts
 * const { loss, dLogits } = distillationLossAndGradient({ teacher: [2, 0, -1], studentLogits: [1, 1, 0],
 *   divergence: 'forward-kl' }); // dLogits = softmax(student) − softmax(teacher)
 * ```
 */
export function distillationLossAndGradient(input: {
  teacher: ArrayLike<number> | TopKLogprobs;
  studentLogits: ArrayLike<number>;
  divergence: DistillDivergence;
  beta?: number;
  temperature?: number;
}): LossAndGradient {
  const beta = input.beta ?? DISTILL_LOSS_DEFAULTS.beta;
  const temperature = input.temperature ?? DISTILL_LOSS_DEFAULTS.temperature;
  const scaled = Array.from(input.studentLogits, (value) => value / temperature);
  const studentLogprobs = logSoftmax(scaled);
  const vocab = studentLogprobs.length;
  let loss: number;
  let gPerToken: Float64Array;
  const teacher = input.teacher;
  if (isTopK(teacher)) {
    const buckets = topKBuckets(teacher, studentLogprobs);
    loss = divergence(input.divergence, buckets.teacher, buckets.student, beta);
    const gBuckets = gradientWrtDistribution(
      input.divergence,
      buckets.teacher,
      buckets.student,
      beta,
    );
    const k = teacher.tokenIds.length;
    gPerToken = new Float64Array(vocab).fill(gBuckets[k]!);
    teacher.tokenIds.forEach((id, j) => {
      gPerToken[id] = gBuckets[j]!;
    });
  } else {
    const teacherLogprobs = logSoftmax(Array.from(teacher, (value) => value / temperature));
    loss = divergence(input.divergence, teacherLogprobs, studentLogprobs, beta);
    gPerToken = gradientWrtDistribution(input.divergence, teacherLogprobs, studentLogprobs, beta);
  }
  // Softmax Jacobian: dL/dz_i = s_i (g_i − Σ_j s_j g_j) / τ
  let mean = 0;
  const probabilities = new Float64Array(vocab);
  for (let index = 0; index < vocab; index++) {
    probabilities[index] = Math.exp(studentLogprobs[index]!);
    if (probabilities[index]! > 0) mean += probabilities[index]! * gPerToken[index]!;
  }
  const dLogits = new Float64Array(vocab);
  for (let index = 0; index < vocab; index++) {
    const p = probabilities[index]!;
    dLogits[index] = p > 0 ? (p * (gPerToken[index]! - mean)) / temperature : 0;
  }
  return { loss, dLogits };
}

function isTopK(value: unknown): value is TopKLogprobs {
  return (
    value !== null && typeof value === 'object' && Array.isArray((value as TopKLogprobs).tokenIds)
  );
}
