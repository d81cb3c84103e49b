import type { RewardFunction } from '@rlvr/core';
import { checkR1Format, extractAnswer, verifyMath } from '@rlvr/verifiers';

/**
 * The answer inside `<answer>…</answer>` (no fallback to the last number: a response without the
 * tag has no answer), or null.
 */
export function taskAnswer(completion: string): string | null {
  return extractAnswer(completion, { fallback: 'none' }).answer;
}

/** 1 when the `<answer>` is equivalent to the gold answer (@rlvr/verifiers' `verifyMath`), else 0. */
export function correctness(completion: string, gold: string): number {
  return verifyMath(completion, gold, { fallback: 'none' }).score === 1 ? 1 : 0;
}

/**
 * 1 when the completion is exactly `<think>…</think><answer>…</answer>` (DeepSeek-R1's format,
 * @rlvr/verifiers' `checkR1Format`: one of each tag, in order, nothing outside), else 0.
 */
export function r1Format(completion: string): number {
  return checkR1Format(completion).score;
}

/** Correctness as a core `RewardFunction` (the gold answer is `answer`). */
export const correctnessReward: RewardFunction = ({ completion, answer }) =>
  typeof answer === 'string' ? correctness(completion, answer) : null;

/** The R1 format check as a core `RewardFunction`. */
export const formatReward: RewardFunction = ({ completion }) => r1Format(completion);

/** Accepted for distillation: correct and well-formed (1), else 0. */
export const verifiedReward: RewardFunction = ({ completion, answer }) =>
  typeof answer === 'string' ? correctness(completion, answer) * r1Format(completion) : null;
