import {
  assertSampler,
  type Completion,
  InvalidArgumentError,
  type Prompt,
  type Sampler,
  throwIfAborted,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { drawCompletions, readSampling, type SamplingOptions } from '../sampling/sampled-vote.js';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { checkFunction, safeExtract } from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn } from '../vote/types.js';
import { summarize, tokenConfidences } from './confidence.js';
import {
  type ConfidenceVoteResult,
  type ConfidenceWeighting,
  voteOverKept,
} from './confidence-vote.js';

/** Options of {@link deepConfOnline}. */
export type DeepConfOnlineOptions = {
  sampler: Sampler;
  prompt: Prompt;
  /** Sampling settings of every trace (`topLogprobs` and `confidenceStop` are set by the driver). */
  sampling: SamplingOptions;
  /** Hard cap on traces, warm-up included (the budget B). */
  maxSamples: number;
  /** Hard cap on generated tokens over all traces, stopped ones included. Default: no cap. */
  maxTokens?: number;
  /** Warm-up traces N_init, sampled without a stop, that set the threshold. Default 16. */
  warmup?: number;
  /** η: the threshold keeps the top `keepTop`% of the warm-up (10: DeepConf-low, 90: -high). Default 10. */
  keepTop?: number;
  /** Stop at this weighted consensus τ (the winner's share). Default 0.95. */
  consensus?: number;
  /** Sliding window of the group confidence, in tokens. Default 2048. */
  windowSize?: number;
  /** k of the top-k logprobs a token's confidence is computed from. Default 20. */
  topLogprobs?: number;
  /** Traces per sampler call after the warm-up (consensus is checked after each call). Default 1. */
  batchSize?: number;
  /** Default `'confidence'`. */
  weighting?: ConfidenceWeighting;
  extract?: ExtractFn;
  equals?: EqualsFn;
  signal?: AbortSignal;
};

/** Why {@link deepConfOnline} stopped sampling. */
export type DeepConfStopReason = 'consensus' | 'sample-budget' | 'token-budget';

/** The outcome of {@link deepConfOnline}. */
export type DeepConfOnlineResult = ConfidenceVoteResult & {
  /** Every trace drawn, warm-up first, in order (stopped ones included). */
  completions: Completion[];
  samplesUsed: number;
  /** Tokens generated in total (stopped traces included). */
  tokensUsed: number;
  /** Traces of the warm-up. */
  warmupSamples: number;
  /** Traces ended by the confidence stop (`finishReason: 'confidence'`; they never vote). */
  earlyStopped: number;
  /** The stop threshold s set by the warm-up (`NaN` when no warm-up trace had a token). */
  stopThreshold: number;
  stoppedBecause: DeepConfStopReason;
};

const FN = 'deepConfOnline';
const KEYS = [
  'sampler',
  'prompt',
  'sampling',
  'maxSamples',
  'maxTokens',
  'warmup',
  'keepTop',
  'consensus',
  'windowSize',
  'topLogprobs',
  'batchSize',
  'weighting',
  'extract',
  'equals',
  'signal',
];

/** `np.percentile(values, q)` (linear interpolation); `NaN` for no values. @internal */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (q / 100) * (sorted.length - 1);
  const low = Math.floor(position);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

/**
 * DeepConf online (Fu et al. 2025, Algorithm 2) over any core `Sampler`: `warmup` traces set the
 * stop threshold s = the (100 − η)th percentile of their lowest group confidences; then traces
 * are sampled with `confidenceStop: { windowSize, threshold: s }` (the sampler ends a trace whose
 * window confidence drops below s), until the confidence-weighted vote's winner holds a share
 * ≥ `consensus` (checked after every call that follows the warm-up, as in the paper's Algorithm 2)
 * or the sample / token budget ends.
 * The vote keeps every complete trace whose lowest group confidence is ≥ s, weighted by it;
 * stopped traces never vote (their tokens count). Each call gets seed `sampling.seed + callIndex`.
 *
 * @example
 * ```ts
 * const result = await deepConfOnline({ sampler, prompt, maxSamples: 64, warmup: 16, keepTop: 10,
 *   windowSize: 2048, sampling: { maxNewTokens: 8192, temperature: 0.6, seed: 0 } });
 * result.answer; result.share; result.tokensUsed; result.earlyStopped; result.stoppedBecause;
 * ```
 * @throws {InvalidArgumentError} for bad options; `AbortedError` when `signal` aborts or a group
 * comes back aborted (`finishReason: 'abort'`): nothing is voted over then.
 */
export async function deepConfOnline(
  options: DeepConfOnlineOptions,
): Promise<DeepConfOnlineResult> {
  const o = readOnlineOptions(options);
  const run: OnlineRun = {
    completions: [],
    answers: [],
    confidences: [],
    tokensUsed: 0,
    calls: 0,
    stopThreshold: Number.NaN,
  };
  const tallyNow = () => {
    const kept = new Set<number>();
    run.confidences.forEach((confidence, index) => {
      if (confidence !== null && !(confidence < run.stopThreshold)) kept.add(index);
    });
    return voteOverKept(run.completions, run.confidences, kept, o, run.answers);
  };

  const warmupSamples = Math.min(o.warmup, o.maxSamples);
  let stoppedBecause: DeepConfStopReason | undefined;
  if (!(await drawTraces(run, o, warmupSamples))) stoppedBecause = 'token-budget';
  const warm = run.confidences.filter((confidence): confidence is number => confidence !== null);
  run.stopThreshold = percentile(warm, 100 - o.keepTop);
  let result = tallyNow();
  let sampledOnline = false; // consensus is checked after each call that follows the warm-up
  while (!stoppedBecause) {
    throwIfAborted(o.signal, `${FN}()`);
    const left = o.maxSamples - run.completions.length;
    if (sampledOnline && result.votes > 0 && result.share >= o.consensus)
      stoppedBecause = 'consensus';
    else if (left <= 0) stoppedBecause = 'sample-budget';
    else if (run.tokensUsed >= o.maxTokens) stoppedBecause = 'token-budget';
    else if (!(await drawTraces(run, o, Math.min(o.batchSize, left))))
      stoppedBecause = 'token-budget';
    else {
      sampledOnline = true;
      result = tallyNow();
    }
  }
  return {
    ...result,
    completions: run.completions,
    samplesUsed: run.completions.length,
    tokensUsed: run.tokensUsed,
    warmupSamples,
    earlyStopped: run.completions.filter((c) => c.finishReason === 'confidence').length,
    stopThreshold: run.stopThreshold,
    stoppedBecause,
  };
}

/** The traces drawn so far, their answers and confidences (`null`: never votes). */
type OnlineRun = {
  completions: Completion[];
  answers: (string | null)[];
  confidences: (number | null)[];
  tokensUsed: number;
  calls: number;
  /** s, once the warm-up is done (`NaN` before: no stop). */
  stopThreshold: number;
};

/**
 * Draws `count` traces into `run` (with the confidence stop once s is set), capping each trace's
 * tokens by the token budget; false when the budget cannot give each trace a token.
 */
async function drawTraces(run: OnlineRun, o: ResolvedOnline, count: number): Promise<boolean> {
  const perSample = Math.min(
    o.sampling.maxNewTokens,
    Math.floor((o.maxTokens - run.tokensUsed) / count),
  );
  if (perSample < 1) return false;
  const seed = o.sampling.seed === undefined ? undefined : o.sampling.seed + run.calls;
  run.calls++;
  const stop =
    run.stopThreshold > 0 ? { windowSize: o.windowSize, threshold: run.stopThreshold } : null;
  const drawn = await drawCompletions(
    o.sampler,
    o.prompt,
    count,
    {
      ...o.sampling,
      maxNewTokens: perSample,
      topLogprobs: o.topLogprobs,
      ...(stop ? { confidenceStop: stop } : {}),
      ...(seed === undefined ? {} : { seed }),
    },
    o.signal,
    FN,
  );
  const measure = {
    measure: 'lowest-group',
    windowSize: o.windowSize,
    tailSize: o.windowSize,
    bottomFraction: 0.1,
  } as const;
  for (const completion of drawn) {
    run.completions.push(completion);
    run.tokensUsed += completion.tokenIds.length;
    const complete = completion.finishReason !== 'confidence';
    const tops = completion.topLogprobs ?? [];
    if (complete && tops.length !== completion.tokenIds.length) {
      throw new InvalidArgumentError({
        parameter: 'options.sampler',
        functionName: FN,
        value: o.sampler.modelId,
        expected: `a sampler that returns topLogprobs (one row per token) when asked (got ${tops.length} rows for ${completion.tokenIds.length} tokens)`,
      });
    }
    run.confidences.push(
      complete && tops.length > 0 ? summarize(tokenConfidences(tops), measure) : null,
    );
    run.answers.push(complete ? safeExtract(o.extract, completion.text) : null);
  }
  return true;
}

type ResolvedOnline = {
  sampler: Sampler;
  prompt: Prompt;
  sampling: SamplingOptions & { maxNewTokens: number };
  maxSamples: number;
  maxTokens: number;
  warmup: number;
  keepTop: number;
  consensus: number;
  windowSize: number;
  topLogprobs: number;
  batchSize: number;
  weighting: ConfidenceWeighting;
  extract: ExtractFn;
  equals: EqualsFn;
  signal: AbortSignal | undefined;
};

function readOnlineOptions(options: DeepConfOnlineOptions): ResolvedOnline {
  const raw = validateOptions<DeepConfOnlineOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: KEYS,
  });
  assertSampler(raw.sampler, 'options.sampler');
  for (const key of ['topLogprobs', 'confidenceStop'] as const) {
    const sampling = raw.sampling as Record<string, unknown> | undefined;
    if (sampling !== null && typeof sampling === 'object' && key in sampling) {
      throw new InvalidArgumentError({
        parameter: `options.sampling.${key}`,
        functionName: FN,
        value: sampling[key],
        expected: `nothing: ${FN} sets it (use options.topLogprobs, options.windowSize, options.keepTop)`,
      });
    }
  }
  const sampling = readSampling(raw.sampling, FN) as SamplingOptions & { maxNewTokens: number };
  const integer = (value: unknown, name: string, fallback: number | undefined, min = 1) =>
    validateInteger(value ?? fallback, { parameter: `options.${name}`, functionName: FN, min });
  const maxSamples = integer(raw.maxSamples, 'maxSamples', undefined);
  return {
    sampler: raw.sampler,
    prompt: raw.prompt as Prompt,
    sampling,
    maxSamples,
    maxTokens:
      raw.maxTokens === undefined
        ? Number.POSITIVE_INFINITY
        : integer(raw.maxTokens, 'maxTokens', undefined),
    warmup: integer(raw.warmup, 'warmup', 16),
    keepTop: validateNumber(raw.keepTop ?? 10, {
      parameter: 'options.keepTop',
      functionName: FN,
      min: 0,
      exclusiveMin: true,
      max: 100,
    }),
    consensus: validateNumber(raw.consensus ?? 0.95, {
      parameter: 'options.consensus',
      functionName: FN,
      min: 0,
      exclusiveMin: true,
      max: 1,
    }),
    windowSize: integer(raw.windowSize, 'windowSize', 2048),
    topLogprobs: integer(raw.topLogprobs, 'topLogprobs', 20),
    batchSize: integer(raw.batchSize, 'batchSize', 1),
    weighting: validateOneOf(raw.weighting ?? 'confidence', ['confidence', 'uniform'] as const, {
      parameter: 'options.weighting',
      functionName: FN,
    }),
    extract: checkFunction(raw.extract, 'options.extract', FN) ?? defaultExtract,
    equals: checkFunction(raw.equals, 'options.equals', FN) ?? defaultEquals,
    signal: raw.signal,
  };
}
