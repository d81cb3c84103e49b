import { createRng, type Rng, validateOptions } from '@rlvr/core';
import { DistributionBuilder, type ResolvedLogitsOptions } from './logits-processors.js';

/** One sampled token with its behaviour logprob (and the unmodified model logprob if asked). */
export type SampledToken = {
  tokenId: number;
  /** Log-probability under the distribution actually sampled from (after all processors). */
  logprob: number;
  /** Log-probability under the raw model distribution (temperature 1, no filtering), if asked. */
  modelLogprob?: number;
};

/**
 * The random stream of one sequence: `derive`d from the request seed, the prompt index and the
 * sample index, so a sequence's tokens do not depend on batching, worker count or the other
 * sequences in the batch.
 */
export function sequenceRng(seed: number, promptIndex: number, sampleIndex: number): Rng {
  return createRng(seed).derive(`prompt-${promptIndex}`).derive(sampleIndex);
}

/**
 * Samples tokens from logits rows with the processors of {@link DistributionBuilder} and one
 * uniform draw per token from the sequence's {@link Rng} (multinomial by inverse CDF; greedy when
 * temperature is 0, which draws nothing).
 *
 * @example
 * ```ts
 * const sampler = new TokenSampler(vocabSize, resolveLogitsOptions({ temperature: 0.8, topP: 0.9 }));
 * const { tokenId, logprob } = sampler.sample(logits, row * vocabSize, rng);
 * ```
 */
export class TokenSampler {
  readonly builder: DistributionBuilder;
  readonly options: ResolvedLogitsOptions;

  constructor(vocabSize: number, options: ResolvedLogitsOptions) {
    this.builder = new DistributionBuilder(vocabSize);
    this.options = options;
  }

  /**
   * Samples from `logits[offset … offset + vocabSize)`. `penaltyTokens[0 … penaltyCount)` are the
   * distinct ids seen so far (only read when the repetition penalty is not 1).
   */
  sample(
    logits: ArrayLike<number>,
    offset: number,
    rng: Rng,
    options: {
      modelLogprob?: boolean;
      penaltyTokens?: ArrayLike<number>;
      penaltyCount?: number;
    } = {},
  ): SampledToken {
    for (const key in options) {
      if (key !== 'modelLogprob' && key !== 'penaltyTokens' && key !== 'penaltyCount') {
        validateOptions(options, {
          parameter: 'options',
          functionName: 'TokenSampler.sample',
          known: ['modelLogprob', 'penaltyTokens', 'penaltyCount'],
        });
      }
    }
    const { builder } = this;
    builder.build(logits, offset, this.options, options.penaltyTokens, options.penaltyCount);
    const tokenId = this.options.temperature === 0 ? builder.argmax : builder.sample(rng.next());
    const result: SampledToken = { tokenId, logprob: builder.logprob(tokenId) };
    if (options.modelLogprob)
      result.modelLogprob = rawLogprob(logits, offset, builder.vocabSize, tokenId);
    return result;
  }
}

/** log softmax(logits[offset … offset + size))[token], in float64. */
export function rawLogprob(
  logits: ArrayLike<number>,
  offset: number,
  size: number,
  token: number,
): number {
  let max = -Infinity;
  for (let index = 0; index < size; index++) {
    const value = logits[offset + index]!;
    if (value > max) max = value;
  }
  let sum = 0;
  for (let index = 0; index < size; index++) sum += Math.exp(logits[offset + index]! - max);
  return logits[offset + token]! - max - Math.log(sum);
}
