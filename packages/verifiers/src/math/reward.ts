import {
  type RewardFunction,
  rejectIneffective,
  type Verifier,
  type VerifyInput,
  type VerifyResult,
  validateOptions,
} from '@rlvr/core';
import type { MathVerifierPool } from './pool.js';
import {
  resolveVerifyMathOptions,
  VERIFY_MATH_OPTION_KEYS,
  type VerifyMathOptions,
  verifyMath,
} from './verify-math.js';

/** Options of {@link createMathVerifier} and {@link mathReward}. */
export type MathRewardOptions = VerifyMathOptions & {
  /** Run checks in this worker pool (hard time budget); the verifier/reward becomes async. */
  pool?: MathVerifierPool;
  /** Pass the prompt as `question` so that echoing it cannot supply the answer (default true). */
  questionFromPrompt?: boolean;
};

function notApplicable(reason: string): VerifyResult {
  return { score: null, reason, extracted: null, timings: {} };
}

function split(options: MathRewardOptions | undefined, functionName: string) {
  validateOptions(options, {
    parameter: 'options',
    functionName,
    known: [...VERIFY_MATH_OPTION_KEYS, 'pool', 'questionFromPrompt'],
  });
  const { pool, questionFromPrompt = true, ...verifyOptions } = options ?? {};
  if (functionName === 'mathReward' && questionFromPrompt && verifyOptions.question !== undefined) {
    rejectIneffective({
      parameter: 'options.question',
      value: verifyOptions.question,
      because:
        'every reward input has a prompt, which is used as the question (questionFromPrompt is not false)',
      functionName,
    });
  }
  resolveVerifyMathOptions(verifyOptions, functionName);
  return { pool, questionFromPrompt, verifyOptions };
}

/**
 * A core {@link Verifier} for math answers: `reference` is the gold answer (string or number);
 * a missing reference gives score `null`.
 *
 * @example
 * ```ts
 * const verifier = createMathVerifier();
 * await verifier.verify({ response: '\\boxed{4}', reference: '4' }); // { score: 1, … }
 * ```
 */
export function createMathVerifier(options?: MathRewardOptions): Verifier {
  const { pool, questionFromPrompt, verifyOptions } = split(options, 'createMathVerifier');
  return {
    name: 'math',
    verify(input: VerifyInput) {
      const gold = input.reference;
      if (typeof gold !== 'string' && !(typeof gold === 'number' && Number.isFinite(gold))) {
        return notApplicable('no gold answer (reference must be a string or a number)');
      }
      const callOptions =
        questionFromPrompt && input.prompt
          ? { ...verifyOptions, question: input.prompt }
          : verifyOptions;
      return pool
        ? pool.verify(input.response, gold, callOptions)
        : verifyMath(input.response, gold, callOptions);
    },
  };
}

/**
 * The math verifier as a core {@link RewardFunction}: 1 / 0 by equivalence with `answer`, `null`
 * when the sample has no answer or its gold cannot be parsed.
 *
 * @example
 * ```ts
 * const reward = mathReward();
 * reward({ prompt: 'What is 2+2?', completion: 'It is \\boxed{4}.', answer: '4' }); // 1
 * ```
 */
export function mathReward(options?: MathRewardOptions): RewardFunction {
  split(options, 'mathReward');
  const verifier = createMathVerifier(options);
  return (input) => {
    const result = verifier.verify({
      response: input.completion,
      reference: input.answer,
      prompt: input.prompt,
    });
    return result instanceof Promise ? result.then((value) => value.score) : result.score;
  };
}
