import {
  InvalidArgumentError,
  type RewardFunction,
  rejectIneffective,
  softOverlongPenalty,
  type Verifier,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';

/** Options of {@link lengthPenaltyReward}. */
export type LengthPenaltyOptions = {
  /** L_max: the token cap (maxNewTokens). */
  maxLength: number;
  /** L_cache: the soft zone before L_max (DAPO uses 4096 of 20480). */
  bufferLength: number;
  /** Penalty at and beyond L_max (default 1). */
  penaltyFactor?: number;
  /**
   * How to measure a sample when `completionTokens` is missing: `'error'` (default) throws,
   * `'characters'` uses the completion's character count / `charsPerToken` (default 4).
   */
  fallback?: 'error' | 'characters';
  charsPerToken?: number;
};

/**
 * DAPO's soft overlong punishment as a reward: 0 up to L_max − L_cache, falling linearly to
 * −penaltyFactor at L_max (core's `softOverlongPenalty`), measured in `completionTokens`.
 *
 * @example
 * ```ts
 * const penalty = lengthPenaltyReward({ maxLength: 1024, bufferLength: 256 });
 * penalty({ prompt: '', completion: '…', completionTokens: 900 }); // -0.515625
 * ```
 */
export function lengthPenaltyReward(options: LengthPenaltyOptions): RewardFunction {
  const functionName = 'lengthPenaltyReward';
  validateOptions(options, {
    parameter: 'options',
    functionName,
    known: ['maxLength', 'bufferLength', 'penaltyFactor', 'fallback', 'charsPerToken'],
  });
  // Core's penalty takes only its own three options.
  const penalty = {
    maxLength: options.maxLength,
    bufferLength: options.bufferLength,
    ...(options.penaltyFactor === undefined ? {} : { penaltyFactor: options.penaltyFactor }),
  };
  softOverlongPenalty(0, penalty); // validates maxLength / bufferLength / penaltyFactor
  const fallback =
    options.fallback === undefined
      ? 'error'
      : validateOneOf(options.fallback, ['error', 'characters'], {
          parameter: 'options.fallback',
          functionName,
        });
  if (options.charsPerToken !== undefined && fallback !== 'characters') {
    rejectIneffective({
      parameter: 'options.charsPerToken',
      value: options.charsPerToken,
      because: "options.fallback is not 'characters' (lengths are read from completionTokens)",
      functionName,
    });
  }
  const charsPerToken =
    options.charsPerToken === undefined
      ? 4
      : validateNumber(options.charsPerToken, {
          parameter: 'options.charsPerToken',
          functionName,
          min: 0,
          exclusiveMin: true,
        });
  return (input) => {
    let tokens = input.completionTokens;
    if (tokens === undefined) {
      if (fallback === 'error') {
        throw new InvalidArgumentError({
          parameter: 'input.completionTokens',
          functionName: 'lengthPenaltyReward()',
          value: tokens,
          expected: "the completion's token count (or fallback: 'characters')",
        });
      }
      tokens = Math.ceil(input.completion.length / charsPerToken);
    }
    return softOverlongPenalty(tokens, penalty);
  };
}

/** Options of {@link repetitionPenaltyReward}. */
export type RepetitionPenaltyOptions = {
  /** n-gram size in words (default 3, as open-r1). */
  ngramSize?: number;
  /** Most negative reward (default −1): given when every n-gram repeats. */
  maxPenalty?: number;
};

/**
 * open-r1's n-gram repetition penalty: `maxPenalty × (1 − unique n-grams / total n-grams)` over
 * lower-cased whitespace-separated words; 0 for completions shorter than one n-gram.
 *
 * @example
 * ```ts
 * const penalty = repetitionPenaltyReward({ ngramSize: 2, maxPenalty: -1 });
 * penalty({ prompt: '', completion: 'a b a b a b' }); // 5 bigrams, 2 unique → -0.6
 * ```
 */
export function repetitionPenaltyReward(options: RepetitionPenaltyOptions = {}): RewardFunction {
  const functionName = 'repetitionPenaltyReward';
  validateOptions(options, {
    parameter: 'options',
    functionName,
    known: ['ngramSize', 'maxPenalty'],
  });
  const ngramSize =
    options.ngramSize === undefined
      ? 3
      : validateInteger(options.ngramSize, {
          parameter: 'options.ngramSize',
          functionName,
          min: 1,
          max: 64,
        });
  const maxPenalty =
    options.maxPenalty === undefined
      ? -1
      : validateNumber(options.maxPenalty, {
          parameter: 'options.maxPenalty',
          functionName,
          max: 0,
        });
  return (input) => repetitionPenalty(input.completion, ngramSize, maxPenalty);
}

export function repetitionPenalty(text: string, ngramSize: number, maxPenalty: number): number {
  const words = text
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== '');
  const total = words.length - ngramSize + 1;
  if (total <= 0) return 0;
  const seen = new Set<string>();
  for (let index = 0; index < total; index++)
    seen.add(words.slice(index, index + ngramSize).join('\u0000'));
  const scaling = 1 - seen.size / total;
  return scaling === 0 ? 0 : scaling * maxPenalty;
}

/**
 * Adapts any core {@link Verifier} to a {@link RewardFunction}: `reference` is taken from the
 * sample's `answer` (or from `referenceOf(input)`), the reward is the verifier's `score`.
 *
 * @example
 * ```ts
 * const reward = verifierReward(createMathVerifier());
 * ```
 */
export function verifierReward(
  verifier: Verifier,
  options: { referenceOf?: (input: Parameters<RewardFunction>[0]) => unknown } = {},
): RewardFunction {
  if (typeof verifier?.verify !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'verifier',
      functionName: 'verifierReward',
      value: verifier,
      expected: 'a Verifier with verify()',
    });
  }
  validateOptions(options, {
    parameter: 'options',
    functionName: 'verifierReward',
    known: ['referenceOf'],
  });
  const referenceOf = options.referenceOf ?? ((input) => input.answer);
  return (input) => {
    const result = verifier.verify({
      response: input.completion,
      reference: referenceOf(input),
      prompt: input.prompt,
    });
    return result instanceof Promise ? result.then((value) => value.score) : result.score;
  };
}
