import {
  type Completion,
  InvalidArgumentError,
  type Prompt,
  type Sampler,
  throwIfAborted,
} from '@rlvr/core';
import {
  custom,
  defineOptions,
  integer,
  number,
  type OptionsInput,
  oneOf,
  optional,
  required,
  withDefault,
} from '@rlvr/options';
import {
  drawCompletions,
  SAMPLING_SCHEMA,
  type SamplingOptions,
} from '../sampling/sampled-vote.js';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { safeExtract } from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn } from '../vote/types.js';
import { ANSWER_FIELDS, SAMPLER_FIELD, SIGNAL_FIELD } from '../vote/vote-fields.js';
import { summarize, tokenConfidences } from './confidence.js';
import {
  type ConfidenceVoteResult,
  type ConfidenceWeighting,
  voteOverKept,
} from './confidence-vote.js';

const FN = 'deepConfOnline';

/**
 * The options of {@link deepConfOnline}, declared once: {@link DeepConfOnlineOptions},
 * {@link DEEPCONF_ONLINE_DEFAULTS}, the validation and the README table come from it.
 */
export const DEEPCONF_ONLINE_OPTIONS = defineOptions(
  {
    sampler: SAMPLER_FIELD,
    // passed to the sampler, which checks it (as it always has); required by the type
    prompt: optional(
      custom<Prompt>(() => true, "a Prompt (the sampler's input)"),
      {
        description: 'The prompt (text or token ids), passed to the sampler.',
        defaultText: 'required',
      },
    ),
    sampling: required(
      SAMPLING_SCHEMA,
      'Sampling settings of every trace (see `SamplingOptions`; `topLogprobs` and `confidenceStop` are set by the driver).',
    ),
    maxSamples: required(
      integer({ min: 1 }),
      'Hard cap on traces, warm-up included (the budget B).',
    ),
    maxTokens: optional(integer({ min: 1 }), {
      description: 'Hard cap on generated tokens over all traces, stopped ones included.',
      defaultText: 'no cap',
    }),
    warmup: withDefault(
      integer({ min: 1 }),
      16,
      'Warm-up traces N_init, sampled without a stop, that set the threshold.',
    ),
    keepTop: withDefault(
      number({ min: 0, max: 100, exclusiveMin: true }),
      10,
      'η: the threshold keeps the top `keepTop`% of the warm-up (10: DeepConf-low, 90: DeepConf-high).',
    ),
    consensus: withDefault(
      number({ min: 0, max: 1, exclusiveMin: true }),
      0.95,
      "Stop at this weighted consensus τ (the winner's share).",
    ),
    windowSize: withDefault(
      integer({ min: 1 }),
      2048,
      'Sliding window of the group confidence, in tokens.',
    ),
    topLogprobs: withDefault(
      integer({ min: 1 }),
      20,
      "k of the top-k logprobs a token's confidence is computed from.",
    ),
    batchSize: withDefault(
      integer({ min: 1 }),
      1,
      'Traces per sampler call after the warm-up (consensus is checked after each call).',
    ),
    weighting: withDefault(
      oneOf(['confidence', 'uniform'] as const satisfies readonly ConfidenceWeighting[]),
      'confidence',
      "`confidence`: each kept trace's vote weighs its lowest group confidence; `uniform`: 1 each.",
    ),
    ...ANSWER_FIELDS,
    signal: SIGNAL_FIELD,
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link deepConfOnline} (see {@link DEEPCONF_ONLINE_OPTIONS} for each one). */
export type DeepConfOnlineOptions = Omit<
  OptionsInput<typeof DEEPCONF_ONLINE_OPTIONS.schema>,
  'prompt'
> & {
  prompt: Prompt;
};

/** The defaults of {@link deepConfOnline}'s options. */
export const DEEPCONF_ONLINE_DEFAULTS = DEEPCONF_ONLINE_OPTIONS.defaults;

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
  // The driver's own sampling fields: refused with what to set instead (before the schema, which
  // would call them unknown keys).
  const given = (options as { sampling?: unknown } | null | undefined)?.sampling;
  for (const key of ['topLogprobs', 'confidenceStop'] as const) {
    if (given !== null && typeof given === 'object' && key in given) {
      throw new InvalidArgumentError({
        parameter: `options.sampling.${key}`,
        functionName: FN,
        value: (given as Record<string, unknown>)[key],
        expected: `nothing: ${FN} sets it (use options.topLogprobs, options.windowSize, options.keepTop)`,
      });
    }
  }
  const raw = DEEPCONF_ONLINE_OPTIONS.parse(options);
  return {
    ...raw,
    prompt: raw.prompt as Prompt,
    maxTokens: raw.maxTokens ?? Number.POSITIVE_INFINITY,
    extract: raw.extract ?? defaultExtract,
    equals: raw.equals ?? defaultEquals,
    signal: raw.signal,
  };
}
