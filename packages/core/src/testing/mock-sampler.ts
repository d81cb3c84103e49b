import { AbortedError } from '../errors/aborted-error.js';
import type { Completion, SampleRequest, Sampler } from '../types/sampler.js';
import type { WeightSnapshot } from '../types/weights.js';
import { validateOptions } from '../validation/validate.js';

/**
 * What a {@link MockSampler} returns: a fixed list of completions per call, or a function of the
 * request and the call number.
 */
export type MockSampleScript =
  | Completion[][][]
  | ((request: SampleRequest, callIndex: number) => Completion[][] | Promise<Completion[][]>);

/**
 * A scripted {@link Sampler} for tests, modelled on vercel/ai's `MockLanguageModelV3`: it records
 * every call (`sampleCalls`, `weightUpdates`) and replays scripted results.
 *
 * @example
 * ```ts
 * const sampler = new MockSampler({ script: (request) =>
 *   request.prompts.map(() => Array.from({ length: request.n }, () => mockCompletion('42'))) });
 * await sampler.sample({ prompts: ['6*7='], n: 4, maxNewTokens: 8 });
 * sampler.sampleCalls.length; // 1
 * ```
 */
export class MockSampler implements Sampler {
  readonly specificationVersion = 'v1' as const;
  readonly modelId: string;
  /** Every request received, in order. */
  readonly sampleCalls: SampleRequest[] = [];
  /** Every weight snapshot received, in order. */
  readonly weightUpdates: WeightSnapshot[] = [];
  private readonly script: MockSampleScript;

  constructor(options: { script: MockSampleScript; modelId?: string }) {
    const raw = validateOptions<{ script: MockSampleScript; modelId?: string }>(options, {
      parameter: 'options',
      functionName: 'MockSampler',
      known: ['script', 'modelId'],
    });
    this.script = raw.script as MockSampleScript;
    this.modelId = raw.modelId ?? 'mock-model';
  }

  async sample(
    request: SampleRequest,
    options?: { signal?: AbortSignal },
  ): Promise<Completion[][]> {
    if (options?.signal?.aborted) {
      throw new AbortedError({ operation: 'MockSampler.sample()', cause: options.signal.reason });
    }
    const callIndex = this.sampleCalls.length;
    this.sampleCalls.push(structuredClone(request));
    if (typeof this.script === 'function') return this.script(request, callIndex);
    const result = this.script[callIndex];
    if (!result) {
      throw new Error(
        `MockSampler: no scripted result for call ${callIndex} (script has ${this.script.length})`,
      );
    }
    return result;
  }

  async updateWeights(snapshot: WeightSnapshot): Promise<void> {
    this.weightUpdates.push(snapshot);
  }
}

/**
 * Builds a {@link Completion} for tests: one token per character, logprob `logprob` each.
 */
export function mockCompletion(
  text: string,
  options: { finishReason?: Completion['finishReason']; logprob?: number } = {},
): Completion {
  const tokenIds = Array.from(text, (character) => character.codePointAt(0) ?? 0);
  return {
    text,
    tokenIds,
    logprobs: tokenIds.map(() => options.logprob ?? -1),
    finishReason: options.finishReason ?? 'stop',
  };
}
