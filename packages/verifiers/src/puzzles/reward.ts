import type { RewardFunction, RewardInput, Verifier, VerifyInput } from '@rlvr/core';
import { type CountdownTask, type CountdownVerifyOptions, verifyCountdown } from './countdown.js';
import { type KnightsKnavesTask, verifyKnightsKnaves } from './knights-knaves.js';

function validateKnightsKnavesOptions(options: unknown): void {
  verifyKnightsKnaves('', { names: ['A'], solution: { A: 'knight' } }, options as never);
}

function taskOf<T>(
  input: RewardInput | VerifyInput,
  isTask: (value: unknown) => value is T,
): T | null {
  const candidates =
    'completion' in input ? [input.answer, input.metadata?.task] : [input.reference];
  for (const candidate of candidates) if (isTask(candidate)) return candidate;
  return null;
}

function isCountdownTask(value: unknown): value is Pick<CountdownTask, 'numbers' | 'target'> {
  const task = value as CountdownTask | null;
  return (
    typeof task === 'object' &&
    task !== null &&
    Array.isArray(task.numbers) &&
    task.numbers.length > 0 &&
    task.numbers.every((number) => Number.isInteger(number) && number >= 0) &&
    Number.isInteger(task.target)
  );
}

function isKnightsKnavesTask(
  value: unknown,
): value is Pick<KnightsKnavesTask, 'names' | 'solution'> {
  const task = value as KnightsKnavesTask | null;
  return (
    typeof task === 'object' &&
    task !== null &&
    Array.isArray(task.names) &&
    task.names.length > 0 &&
    typeof task.solution === 'object' &&
    task.solution !== null &&
    task.names.every((name) => task.solution[name] === 'knight' || task.solution[name] === 'knave')
  );
}

/**
 * Countdown as a reward: the task (`{ numbers, target }`) comes from `answer` or `metadata.task`;
 * samples without one get `null`.
 *
 * @example
 * ```ts
 * const reward = countdownReward();
 * reward({ prompt: task.prompt, completion: '<answer>(6 - 2) * 5</answer>', answer: { numbers: [2, 5, 6], target: 20 } }); // 1
 * ```
 */
export function countdownReward(options: CountdownVerifyOptions = {}): RewardFunction {
  verifyCountdown('', { numbers: [1], target: 1 }, options); // validates options
  return (input) => {
    const task = taskOf(input, isCountdownTask);
    return task ? verifyCountdown(input.completion, task, options).score : null;
  };
}

/** A core {@link Verifier} for Countdown (`reference` is the task). */
export function createCountdownVerifier(options: CountdownVerifyOptions = {}): Verifier {
  verifyCountdown('', { numbers: [1], target: 1 }, options); // validates options
  return {
    name: 'countdown',
    verify(input) {
      const task = taskOf(input, isCountdownTask);
      return task
        ? verifyCountdown(input.response, task, options)
        : { score: null, reason: 'no Countdown task in reference' };
    },
  };
}

/** Knights and Knaves as a reward (task from `answer` or `metadata.task`; else `null`). */
export function knightsKnavesReward(options: { partialCredit?: boolean } = {}): RewardFunction {
  validateKnightsKnavesOptions(options);
  return (input) => {
    const task = taskOf(input, isKnightsKnavesTask);
    return task ? verifyKnightsKnaves(input.completion, task, options).score : null;
  };
}

/** A core {@link Verifier} for Knights and Knaves (`reference` is the task). */
export function createKnightsKnavesVerifier(options: { partialCredit?: boolean } = {}): Verifier {
  validateKnightsKnavesOptions(options);
  return {
    name: 'knights-knaves',
    verify(input) {
      const task = taskOf(input, isKnightsKnavesTask);
      return task
        ? verifyKnightsKnaves(input.response, task, options)
        : { score: null, reason: 'no Knights-and-Knaves task in reference' };
    },
  };
}
