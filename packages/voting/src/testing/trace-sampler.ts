import {
  AbortedError,
  type Completion,
  type Prompt,
  type SampleRequest,
  type Sampler,
  type TopLogprob,
} from '@rlvr/core';

/** One simulated reasoning trace: its final answer and the confidence of each of its tokens. */
export type SimulatedTrace = { answer: string | null; confidences: readonly number[] };

/** What a simulated trace is drawn from: the request's seed and which trace of which prompt. */
export type TraceContext = {
  prompt: Prompt;
  promptIndex: number;
  sampleIndex: number;
  seed: number;
};

/**
 * A core `Sampler` that plays simulated traces (tests and the DeepConf bench; not a model): each
 * token gets top-k logprobs whose mean is minus the planned confidence, `confidenceStop` ends a
 * trace exactly as a real sampler does (window mean < threshold once full), `maxNewTokens` cuts it
 * (`length`), and only a complete trace's text holds its answer (`… \boxed{answer}`).
 * @internal
 */
export class TraceSampler implements Sampler {
  readonly specificationVersion = 'v1' as const;
  readonly modelId = 'simulated-traces';
  readonly requests: SampleRequest[] = [];

  constructor(private readonly plan: (context: TraceContext) => SimulatedTrace) {}

  async sample(
    request: SampleRequest,
    options?: { signal?: AbortSignal },
  ): Promise<Completion[][]> {
    if (options?.signal?.aborted)
      throw new AbortedError({ operation: 'sample()', cause: options.signal.reason });
    this.requests.push(request);
    const seed = request.seed ?? 0;
    return request.prompts.map((prompt, promptIndex) =>
      Array.from({ length: request.n }, (_, sampleIndex) =>
        play(this.plan({ prompt, promptIndex, sampleIndex, seed }), request),
      ),
    );
  }
}

function play(trace: SimulatedTrace, request: SampleRequest): Completion {
  const k = request.topLogprobs ?? 0;
  const stop = request.confidenceStop;
  const length = Math.min(trace.confidences.length, request.maxNewTokens);
  const topLogprobs: TopLogprob[][] = [];
  let finishReason: Completion['finishReason'] =
    trace.confidences.length > request.maxNewTokens ? 'length' : 'stop';
  let sum = 0;
  let used = length;
  for (let index = 0; index < length; index++) {
    const c = trace.confidences[index]!;
    if (k > 0) topLogprobs.push(topOf(c, k));
    sum += c;
    if (stop && index >= stop.windowSize) sum -= trace.confidences[index - stop.windowSize]!;
    // a window that falls at the last token does not change how the trace ends (EOS or length)
    const last = index === length - 1;
    if (stop && !last && index >= stop.windowSize - 1 && sum / stop.windowSize < stop.threshold) {
      finishReason = 'confidence';
      used = index + 1;
      break;
    }
  }
  const complete = finishReason === 'stop';
  return {
    text: complete
      ? `Reasoning over ${used} tokens. The answer is \\boxed{${trace.answer ?? ''}}.`
      : `Reasoning over ${used} tokens, unfinished`,
    tokenIds: new Array<number>(used).fill(7),
    logprobs: new Array<number>(used).fill(-0.1),
    ...(k > 0 ? { topLogprobs } : {}),
    finishReason,
  };
}

/** k logprobs ≤ 0 whose mean is −c: −c ± a spread that keeps the largest ≤ 0. */
function topOf(c: number, k: number): TopLogprob[] {
  const spread = Math.min(c, 0.5);
  return Array.from({ length: k }, (_, index) => ({
    tokenId: index,
    logprob: -c + (k === 1 ? 0 : spread * (1 - (2 * index) / (k - 1))),
  }));
}
