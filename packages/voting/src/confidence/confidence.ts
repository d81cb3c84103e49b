import {
  InvalidArgumentError,
  type TopLogprob,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';

/**
 * How one trace's confidence is summarized (DeepConf, Fu et al. 2025, §3). Token confidence
 * `C_i = −mean` of the position's top-k logprobs; group confidence = mean `C_i` over a sliding
 * window of `windowSize` tokens (one group over the whole trace when it is shorter).
 */
export type ConfidenceMeasure =
  /** Mean token confidence over the whole trace ("average trace confidence"). */
  | 'mean'
  /** The lowest group confidence (the measure DeepConf-online stops on). */
  | 'lowest-group'
  /** Mean of the lowest `bottomFraction` (default 10%) of the group confidences. */
  | 'bottom-10'
  /** Mean token confidence over the last `tailSize` tokens. */
  | 'tail';

/** Options of {@link traceConfidence}. */
export type TraceConfidenceOptions = {
  /** Default `'lowest-group'`. */
  measure?: ConfidenceMeasure;
  /** Sliding-window size for the group measures. Default 2048 (the paper's). */
  windowSize?: number;
  /** Tokens at the end for `'tail'`. Default 2048 (the paper's). */
  tailSize?: number;
  /** Fraction of the groups averaged by `'bottom-10'`, in (0, 1]. Default 0.1. */
  bottomFraction?: number;
};

/** The defaults of {@link TraceConfidenceOptions}. */
export const CONFIDENCE_DEFAULTS = {
  measure: 'lowest-group',
  windowSize: 2048,
  tailSize: 2048,
  bottomFraction: 0.1,
} as const satisfies Required<TraceConfidenceOptions>;

const MEASURES: readonly ConfidenceMeasure[] = ['mean', 'lowest-group', 'bottom-10', 'tail'];
/** @internal */
export const TRACE_CONFIDENCE_KEYS = ['measure', 'windowSize', 'tailSize', 'bottomFraction'];

/** DeepConf's token confidence of each position: `−mean` of its top-k logprobs. */
export function tokenConfidences(topLogprobs: readonly (readonly TopLogprob[])[]): number[] {
  return topLogprobs.map((top) => {
    let sum = 0;
    for (const entry of top) sum += entry.logprob;
    return top.length === 0 ? 0 : -sum / top.length;
  });
}

/**
 * Sliding-window group confidences: the mean of `confidences` over every window of `windowSize`
 * consecutive tokens (`length − windowSize + 1` groups), or one group (the mean of all) when the
 * trace is shorter than the window; none for an empty trace.
 */
export function groupConfidences(confidences: readonly number[], windowSize: number): number[] {
  const count = confidences.length;
  if (count === 0) return [];
  if (count <= windowSize) return [mean(confidences, 0, count)];
  const groups: number[] = [];
  for (let end = windowSize; end <= count; end++)
    groups.push(mean(confidences, end - windowSize, end));
  return groups;
}

/** A trace's confidence under `measure` from its token confidences (`NaN` for an empty trace). @internal */
export function summarize(
  confidences: readonly number[],
  options: Required<TraceConfidenceOptions>,
): number {
  const count = confidences.length;
  if (count === 0) return Number.NaN;
  switch (options.measure) {
    case 'mean':
      return mean(confidences, 0, count);
    case 'tail':
      return mean(confidences, Math.max(0, count - options.tailSize), count);
    case 'lowest-group':
      return Math.min(...groupConfidences(confidences, options.windowSize));
    case 'bottom-10': {
      const groups = groupConfidences(confidences, options.windowSize).sort((a, b) => a - b);
      const bottom = Math.max(1, Math.floor(groups.length * options.bottomFraction));
      return mean(groups, 0, bottom);
    }
  }
}

/**
 * One trace's confidence (DeepConf): `'lowest-group'` (default), `'bottom-10'`, `'tail'` or
 * `'mean'` over the token confidences of `topLogprobs` (a completion's `topLogprobs`).
 *
 * @example
 * ```ts
 * const [group] = await sampler.sample({ prompts: [p], n: 1, maxNewTokens: 512, topLogprobs: 20 });
 * traceConfidence(group[0].topLogprobs, { measure: 'bottom-10', windowSize: 256 });
 * ```
 * @throws {InvalidArgumentError} for an empty trace, bad top logprobs or options.
 */
export function traceConfidence(
  topLogprobs: readonly (readonly TopLogprob[])[],
  options?: TraceConfidenceOptions,
): number {
  const FN = 'traceConfidence';
  const resolved = resolveConfidenceOptions(options, 'options', FN);
  checkTopLogprobs(topLogprobs, 'topLogprobs', FN);
  if (topLogprobs.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'topLogprobs',
      functionName: FN,
      value: topLogprobs,
      expected: 'the top logprobs of at least one token',
    });
  }
  return summarize(tokenConfidences(topLogprobs), resolved);
}

/** Validates {@link TraceConfidenceOptions} and fills the defaults. @internal */
export function resolveConfidenceOptions(
  value: unknown,
  parameter: string,
  functionName: string,
  extraKeys: readonly string[] = [],
): Required<TraceConfidenceOptions> {
  const raw = validateOptions<TraceConfidenceOptions>(value, {
    parameter,
    functionName,
    known: [...TRACE_CONFIDENCE_KEYS, ...extraKeys],
  });
  return {
    measure: validateOneOf(raw.measure ?? CONFIDENCE_DEFAULTS.measure, MEASURES, {
      parameter: `${parameter}.measure`,
      functionName,
    }),
    windowSize: validateInteger(raw.windowSize ?? CONFIDENCE_DEFAULTS.windowSize, {
      parameter: `${parameter}.windowSize`,
      functionName,
      min: 1,
    }),
    tailSize: validateInteger(raw.tailSize ?? CONFIDENCE_DEFAULTS.tailSize, {
      parameter: `${parameter}.tailSize`,
      functionName,
      min: 1,
    }),
    bottomFraction: validateNumber(raw.bottomFraction ?? CONFIDENCE_DEFAULTS.bottomFraction, {
      parameter: `${parameter}.bottomFraction`,
      functionName,
      min: 0,
      exclusiveMin: true,
      max: 1,
    }),
  };
}

/** Checks a `topLogprobs` array (rows of `{ tokenId, logprob }` with finite logprobs ≤ 0). @internal */
export function checkTopLogprobs(value: unknown, parameter: string, functionName: string): void {
  const fail = (at: string, got: unknown): never => {
    throw new InvalidArgumentError({
      parameter: at,
      functionName,
      value: got,
      expected: 'per token, an array of { tokenId, logprob } with finite logprobs <= 0',
    });
  };
  if (!Array.isArray(value)) fail(parameter, value);
  (value as unknown[]).forEach((row, index) => {
    if (!Array.isArray(row) || row.length === 0) fail(`${parameter}[${index}]`, row);
    for (const entry of row as TopLogprob[]) {
      const logprob = (entry as { logprob?: unknown } | null)?.logprob;
      if (typeof logprob !== 'number' || !Number.isFinite(logprob) || logprob > 1e-6)
        fail(`${parameter}[${index}]`, entry);
    }
  });
}

function mean(values: readonly number[], from: number, to: number): number {
  let sum = 0;
  for (let index = from; index < to; index++) sum += values[index]!;
  return sum / (to - from);
}
