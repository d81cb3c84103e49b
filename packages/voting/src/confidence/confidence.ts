import { InvalidArgumentError, type TopLogprob } from '@rlvr/core';
import {
  defineOptions,
  integer,
  number,
  type OptionsInput,
  type OptionsOutput,
  oneOf,
  withDefault,
} from '@rlvr/options';

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

const MEASURES = [
  'mean',
  'lowest-group',
  'bottom-10',
  'tail',
] as const satisfies readonly ConfidenceMeasure[];

/**
 * The confidence fields (`measure`, `windowSize`, `tailSize`, `bottomFraction`), declared once:
 * {@link traceConfidence}'s options, and spread into the options of the votes that measure it.
 */
export const CONFIDENCE_FIELDS = {
  measure: withDefault(
    oneOf(MEASURES),
    'lowest-group',
    "How a trace's confidence is summarized: `mean` (mean token confidence), `lowest-group` (lowest sliding-window group confidence), `bottom-10` (mean of the lowest `bottomFraction` of the groups), `tail` (mean over the last `tailSize` tokens).",
  ),
  windowSize: withDefault(
    integer({ min: 1 }),
    2048,
    "Sliding-window size for the group measures (the paper's).",
  ),
  tailSize: withDefault(integer({ min: 1 }), 2048, "Tokens at the end for `'tail'` (the paper's)."),
  bottomFraction: withDefault(
    number({ min: 0, exclusiveMin: true, max: 1 }),
    0.1,
    "Fraction of the groups averaged by `'bottom-10'`.",
  ),
};

/** The options of {@link traceConfidence}, declared once. */
export const TRACE_CONFIDENCE_OPTIONS = defineOptions(CONFIDENCE_FIELDS, {
  parameter: 'options',
  functionName: 'traceConfidence',
});

/** Options of {@link traceConfidence} (see {@link CONFIDENCE_FIELDS} for each one). */
export type TraceConfidenceOptions = OptionsInput<typeof TRACE_CONFIDENCE_OPTIONS.schema>;

/** The defaults of {@link TraceConfidenceOptions}. */
export const CONFIDENCE_DEFAULTS = TRACE_CONFIDENCE_OPTIONS.defaults;

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
export function summarize(confidences: readonly number[], options: ResolvedConfidence): number {
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
  const resolved = TRACE_CONFIDENCE_OPTIONS.parse(options);
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

/** {@link TraceConfidenceOptions} with the defaults filled in. @internal */
export type ResolvedConfidence = OptionsOutput<typeof TRACE_CONFIDENCE_OPTIONS.schema>;

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
