import { type RewardFunction, type RewardInput, type Verifier, validateOptions } from '@rlvr/core';
import {
  checkInstructions,
  type InstructionConstraint,
  validateConstraints,
} from './instructions.js';
import { checkR1Format, type R1FormatOptions } from './r1-format.js';

/**
 * The strict R1 format check as a reward: 1 when the completion is exactly
 * `<think>…</think><answer>…</answer>`, else 0.
 *
 * @example
 * ```ts
 * const reward = r1FormatReward();
 * reward({ prompt: 'p', completion: '<think>x</think><answer>4</answer>' }); // 1
 * ```
 */
export function r1FormatReward(options: R1FormatOptions = {}): RewardFunction {
  checkR1Format('', options);
  return (input) => checkR1Format(input.completion, options).score;
}

/** A core {@link Verifier} for the R1 format. */
export function createR1FormatVerifier(options: R1FormatOptions = {}): Verifier {
  checkR1Format('', options);
  return { name: 'r1-format', verify: (input) => checkR1Format(input.response, options) };
}

function constraintsOf(input: RewardInput): InstructionConstraint[] | null {
  const fromMetadata = input.metadata?.constraints;
  const candidate = Array.isArray(fromMetadata)
    ? fromMetadata
    : Array.isArray(input.answer)
      ? input.answer
      : null;
  if (!candidate || candidate.length === 0) return null;
  try {
    return validateConstraints(candidate);
  } catch {
    return null; // malformed dataset constraints: not applicable
  }
}

/**
 * Instruction-following reward: the fraction of constraints met. Constraints come from
 * `options.constraints`, else from the sample (`metadata.constraints` or `answer` when it is an
 * array of constraints); a sample without constraints gets `null`.
 *
 * @example
 * ```ts
 * const reward = instructionReward({ constraints: [{ type: 'no-commas' }, { type: 'lowercase' }] });
 * reward({ prompt: 'p', completion: 'all lower, case' }); // 0.5
 * ```
 */
export function instructionReward(
  options: { constraints?: InstructionConstraint[] } = {},
): RewardFunction {
  validateOptions(options, {
    parameter: 'options',
    functionName: 'instructionReward',
    known: ['constraints'],
  });
  const fixed = options.constraints === undefined ? null : validateConstraints(options.constraints);
  return (input) => {
    const constraints = fixed ?? constraintsOf(input);
    return constraints ? checkInstructions(input.completion, constraints).score : null;
  };
}

/** A core {@link Verifier} for instructions; `reference` holds the constraints. */
export function createInstructionVerifier(): Verifier {
  return {
    name: 'instructions',
    verify(input) {
      const constraints = Array.isArray(input.reference) ? input.reference : null;
      if (!constraints || constraints.length === 0) {
        return {
          score: null,
          reason: 'no constraints (reference must be an array of constraints)',
        };
      }
      return checkInstructions(input.response, constraints as InstructionConstraint[]);
    },
  };
}
