import {
  InvalidArgumentError,
  logSoftmax,
  ShapeMismatchError,
  validateFiniteArray,
  validateInteger,
  validateNumber,
} from '@rlvr/core';
import { DISTILL_LOSS_DEFAULTS } from './loss-defaults.js';

/**
 * KL(P‖Q) = Σ p_i (log p_i − log q_i) from log-probabilities, in float64. Terms with p_i = 0
 * contribute 0; q_i = 0 where p_i > 0 gives +Infinity.
 * @throws {ShapeMismatchError} when the two distributions have different sizes.
 */
export function klDivergence(logP: ArrayLike<number>, logQ: ArrayLike<number>): number {
  const FN = 'klDivergence';
  validateFiniteArray(logP, { parameter: 'logP', functionName: FN, allowInfinity: 'negative' });
  validateFiniteArray(logQ, {
    parameter: 'logQ',
    functionName: FN,
    allowInfinity: 'negative',
    length: logP.length,
  });
  let sum = 0;
  for (let index = 0; index < logP.length; index++) {
    const lp = logP[index]!;
    if (lp === -Infinity) continue;
    sum += Math.exp(lp) * (lp - logQ[index]!);
  }
  return Math.max(sum, 0);
}

/**
 * Which divergence a logit-distillation loss uses, per token, between the teacher T and student S:
 * - `forward-kl`: KL(T‖S) (mode-covering; what SFT on teacher samples approximates),
 * - `reverse-kl`: KL(S‖T) (mode-seeking),
 * - `jsd`: TRL/GKD's generalized JSD with `beta`: β·KL(T‖M) + (1−β)·KL(S‖M), M = β·T + (1−β)·S;
 *   β = 0 is defined as forward KL and β = 1 as reverse KL (as in TRL's `generalized_jsd_loss`).
 */
export type DistillDivergence = 'forward-kl' | 'reverse-kl' | 'jsd';

/**
 * Generalized Jensen–Shannon divergence between teacher and student log-probabilities (TRL/GKD
 * convention): β = 0 → KL(T‖S), β = 1 → KL(S‖T), otherwise β·KL(T‖M) + (1−β)·KL(S‖M) with
 * M = β·T + (1−β)·S.
 *
 * @example
 * ```ts
 * const t = Math.log(0.5), s = Math.log(0.25), s2 = Math.log(0.75);
 * generalizedJsd([t, t], [s, s2], 0);   // = klDivergence(teacher, student)
 * generalizedJsd([t, t], [s, s2], 0.5); // the symmetric JSD
 * ```
 * @throws {InvalidArgumentError} unless 0 ≤ beta ≤ 1.
 */
export function generalizedJsd(
  teacherLogprobs: ArrayLike<number>,
  studentLogprobs: ArrayLike<number>,
  beta: number,
): number {
  const FN = 'generalizedJsd';
  validateNumber(beta, { parameter: 'beta', functionName: FN, min: 0, max: 1 });
  validateFiniteArray(teacherLogprobs, {
    parameter: 'teacherLogprobs',
    functionName: FN,
    allowInfinity: 'negative',
  });
  validateFiniteArray(studentLogprobs, {
    parameter: 'studentLogprobs',
    functionName: FN,
    allowInfinity: 'negative',
    length: teacherLogprobs.length,
  });
  if (beta === 0) return klDivergence(teacherLogprobs, studentLogprobs);
  if (beta === 1) return klDivergence(studentLogprobs, teacherLogprobs);
  const mixture = new Float64Array(teacherLogprobs.length);
  for (let index = 0; index < mixture.length; index++) {
    const t = teacherLogprobs[index]!;
    const s = studentLogprobs[index]!;
    const a = t + Math.log(beta);
    const b = s + Math.log(1 - beta);
    const max = Math.max(a, b);
    mixture[index] =
      max === -Infinity ? -Infinity : max + Math.log(Math.exp(a - max) + Math.exp(b - max));
  }
  return (
    beta * klDivergence(teacherLogprobs, mixture) +
    (1 - beta) * klDivergence(studentLogprobs, mixture)
  );
}

/** A divergence by name. @internal */
export function divergence(
  kind: DistillDivergence,
  teacherLogprobs: ArrayLike<number>,
  studentLogprobs: ArrayLike<number>,
  beta: number,
): number {
  if (kind === 'forward-kl') return klDivergence(teacherLogprobs, studentLogprobs);
  if (kind === 'reverse-kl') return klDivergence(studentLogprobs, teacherLogprobs);
  return generalizedJsd(teacherLogprobs, studentLogprobs, beta);
}

/** The teacher's top-k log-probabilities at one position (cached at trace time). */
export type TopKLogprobs = { tokenIds: number[]; logprobs: number[] };

/**
 * Projects a full distribution and a teacher top-k onto k + 1 buckets: the k teacher tokens and one
 * "everything else" bucket holding the remaining mass. Divergences on these buckets are exact
 * divergences between the two coarse-grained distributions, so they stay well-defined when only the
 * teacher's top-k is known.
 */
export function topKBuckets(
  topK: TopKLogprobs,
  fullLogprobs: ArrayLike<number>,
): { teacher: Float64Array; student: Float64Array } {
  const FN = 'topKBuckets';
  const k = topK.tokenIds.length;
  if (k === 0 || topK.logprobs.length !== k) {
    throw new ShapeMismatchError({
      parameter: 'topK',
      functionName: FN,
      expected: 'matching, non-empty tokenIds and logprobs',
      actual: `${topK.tokenIds.length} ids, ${topK.logprobs.length} logprobs`,
    });
  }
  const teacher = new Float64Array(k + 1);
  const student = new Float64Array(k + 1);
  let teacherMass = 0;
  let studentMass = 0;
  const seen = new Set<number>();
  for (let index = 0; index < k; index++) {
    const id = validateInteger(topK.tokenIds[index], {
      parameter: `topK.tokenIds[${index}]`,
      functionName: FN,
      min: 0,
      max: fullLogprobs.length - 1,
    });
    if (seen.has(id)) {
      throw new InvalidArgumentError({
        parameter: `topK.tokenIds[${index}]`,
        functionName: FN,
        value: id,
        expected: 'distinct token ids',
      });
    }
    seen.add(id);
    teacher[index] = topK.logprobs[index]!;
    student[index] = fullLogprobs[id]!;
    teacherMass += Math.exp(topK.logprobs[index]!);
    studentMass += Math.exp(fullLogprobs[id]!);
  }
  teacher[k] = Math.log(Math.max(1 - teacherMass, 0));
  student[k] = Math.log(Math.max(1 - studentMass, 0));
  return { teacher, student };
}

/**
 * Per-token distillation loss (float64 reference) from teacher and student logits over the full
 * vocabulary, or from the teacher's cached top-k (then on k + 1 buckets, see {@link topKBuckets}).
 * Returns one value per position.
 *
 * @example
 * ```ts
 * distillationLoss({ teacher: [[2, 0, -1]], studentLogits: [[1, 1, 0]], divergence: 'forward-kl' });
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} naming the parameter.
 */
export function distillationLoss(input: {
  /** Teacher logits per position (full vocabulary) or cached top-k logprobs per position. */
  teacher: readonly ArrayLike<number>[] | readonly TopKLogprobs[];
  /** Student logits per position (full vocabulary). */
  studentLogits: readonly ArrayLike<number>[];
  divergence: DistillDivergence;
  /** JSD interpolation β in [0, 1]. Default 0.5. */
  beta?: number;
  /** Softmax temperature applied to both before comparing. Default 1. */
  temperature?: number;
}): number[] {
  const FN = 'distillationLoss';
  const beta = validateNumber(input.beta ?? DISTILL_LOSS_DEFAULTS.beta, {
    parameter: 'beta',
    functionName: FN,
    min: 0,
    max: 1,
  });
  const temperature = validateNumber(input.temperature ?? DISTILL_LOSS_DEFAULTS.temperature, {
    parameter: 'temperature',
    functionName: FN,
    min: 0,
    exclusiveMin: true,
  });
  if (
    !Array.isArray(input.teacher) ||
    !Array.isArray(input.studentLogits) ||
    input.teacher.length !== input.studentLogits.length
  ) {
    throw new ShapeMismatchError({
      parameter: 'teacher',
      functionName: FN,
      expected: 'one entry per student position',
      actual: `${Array.isArray(input.teacher) ? input.teacher.length : 'no'} teacher entries for ${Array.isArray(input.studentLogits) ? input.studentLogits.length : 'no'} positions`,
    });
  }
  if (!['forward-kl', 'reverse-kl', 'jsd'].includes(input.divergence)) {
    throw new InvalidArgumentError({
      parameter: 'divergence',
      functionName: FN,
      value: input.divergence,
      expected: "'forward-kl', 'reverse-kl' or 'jsd'",
    });
  }
  const scale = (logits: ArrayLike<number>) => Array.from(logits, (value) => value / temperature);
  return input.studentLogits.map((logits, position) => {
    const student = logSoftmax(scale(logits));
    const teacherEntry = input.teacher[position]!;
    if (isTopK(teacherEntry)) {
      const buckets = topKBuckets(teacherEntry, student);
      return divergence(input.divergence, buckets.teacher, buckets.student, beta);
    }
    if (teacherEntry.length !== logits.length) {
      throw new ShapeMismatchError({
        parameter: `teacher[${position}]`,
        functionName: FN,
        expected: `${logits.length} logits (the student's vocabulary)`,
        actual: `${teacherEntry.length}`,
      });
    }
    return divergence(input.divergence, logSoftmax(scale(teacherEntry)), student, beta);
  });
}

function isTopK(value: unknown): value is TopKLogprobs {
  return (
    value !== null && typeof value === 'object' && Array.isArray((value as TopKLogprobs).tokenIds)
  );
}
