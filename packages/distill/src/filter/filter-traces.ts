import { createRng, InvalidArgumentError, rejectIneffective } from '@rlvr/core';
import {
  boolean,
  defineOptions,
  expectedText,
  expecting,
  integer,
  number,
  type OptionsInput,
  oneOf,
  optional,
  withDefault,
  zod,
} from '@rlvr/options';
import type { TraceRecord } from '../traces/trace-record.js';

const DEDUPE_RANGE = number({ min: 0, max: 1, exclusiveMin: true });

/**
 * The options of {@link filterTraces}, declared once: {@link FilterTracesOptions},
 * {@link FILTER_TRACES_OPTION_KEYS}, {@link FILTER_TRACES_DEFAULTS}, the validation and the README
 * table all come from it.
 */
export const FILTER_TRACES_OPTIONS = defineOptions(
  {
    maxPerPrompt: optional(integer({ min: 1 }), {
      description: 'Keep at most this many accepted traces per prompt.',
      defaultText: 'all',
    }),
    prefer: withDefault(
      oneOf(['shorter', 'first', 'random']),
      'shorter',
      'Which accepted traces to keep first: `shorter` (fewest tokens; ties by sample index), `first`, `random`.',
    ),
    seed: withDefault(integer(), 0, {
      description:
        "Seed for `prefer: 'random'` (with another `prefer` it is an `INEFFECTIVE_OPTION`).",
    }),
    maxTokens: optional(integer({ min: 1 }), {
      description: 'Drop traces longer than this many tokens.',
      defaultText: 'no cap',
    }),
    dropTruncated: withDefault(
      boolean(),
      true,
      "Drop traces that hit the length cap (`finishReason: 'length'`).",
    ),
    dedupeThreshold: withDefault(
      expecting(zod.union([DEDUPE_RANGE, zod.literal(false)]), expectedText(DEDUPE_RANGE)!),
      0.9,
      'Drop near-duplicates within a prompt: a trace whose word-trigram Jaccard similarity to an already kept trace is ≥ this. 1 drops exact duplicates only; `false` keeps everything.',
    ),
  },
  { parameter: 'options', functionName: 'filterTraces' },
);

/** Options of {@link filterTraces} (see {@link FILTER_TRACES_OPTIONS} for each one). */
export type FilterTracesOptions = OptionsInput<typeof FILTER_TRACES_OPTIONS.schema>;

/**
 * Every key of {@link FilterTracesOptions}: the keys `filterTraces` accepts (any other is an
 * `UNKNOWN_OPTION` error). Layers passing options through (the CLI) check against this list.
 */
export const FILTER_TRACES_OPTION_KEYS = FILTER_TRACES_OPTIONS.keys;

/**
 * The defaults of `filterTraces`' options (`maxPerPrompt` and `maxTokens`: no cap). Layers that
 * show or pass these settings (the CLI's `--print-config`) use them instead of copies.
 */
export const FILTER_TRACES_DEFAULTS = FILTER_TRACES_OPTIONS.defaults;

/** Per-prompt line of the filter report. */
export type PromptFilterStats = {
  promptId: string;
  total: number;
  accepted: number;
  kept: number;
  passRate: number;
};

/** Result of {@link filterTraces}. */
export type FilterTracesResult = {
  kept: TraceRecord[];
  report: {
    prompts: number;
    /** Prompts with at least one accepted trace. */
    promptsWithAccepted: number;
    total: number;
    accepted: number;
    kept: number;
    discarded: {
      rejected: number;
      truncated: number;
      tooLong: number;
      duplicate: number;
      overQuota: number;
    };
    /** Mean pass rate over prompts (the teacher's pass@1 on this data). */
    meanPassRate: number;
    perPrompt: PromptFilterStats[];
  };
};

/**
 * Rejection sampling for distillation: keep only traces the verifier accepted, optionally capped
 * per prompt (preferring shorter correct traces), without truncated, over-long or near-duplicate
 * ones, and report what was kept and why the rest was discarded.
 *
 * Each discarded trace is counted once, under the first reason in this order: rejected (not
 * accepted), truncated, too long, duplicate, over quota.
 *
 * @example
 * ```ts
 * const { kept, report } = filterTraces(await readTraces('traces.jsonl'), { maxPerPrompt: 4 });
 * report.meanPassRate; report.discarded.rejected;
 * ```
 * @throws {InvalidArgumentError} for bad options or records.
 */
export function filterTraces(
  traces: readonly TraceRecord[],
  options: FilterTracesOptions = {},
): FilterTracesResult {
  const FN = 'filterTraces';
  const parsed = FILTER_TRACES_OPTIONS.parse(options);
  if (!Array.isArray(traces)) {
    throw new InvalidArgumentError({
      parameter: 'traces',
      functionName: FN,
      value: traces,
      expected: 'an array of trace records',
    });
  }
  const { prefer, dropTruncated, seed } = parsed;
  const maxPerPrompt = parsed.maxPerPrompt ?? Number.POSITIVE_INFINITY;
  const maxTokens = parsed.maxTokens ?? Number.POSITIVE_INFINITY;
  const dedupe = parsed.dedupeThreshold;
  if ((options as FilterTracesOptions | undefined)?.seed !== undefined && prefer !== 'random') {
    rejectIneffective({
      parameter: 'options.seed',
      value: seed,
      because: `options.prefer is '${prefer}' (the seed only orders prefer: 'random')`,
      functionName: FN,
    });
  }
  const rng = createRng(seed);

  const byPrompt = new Map<string, TraceRecord[]>();
  traces.forEach((trace, index) => {
    if (
      !trace ||
      typeof trace.promptId !== 'string' ||
      typeof trace.completion !== 'string' ||
      !Array.isArray(trace.tokenIds)
    ) {
      throw new InvalidArgumentError({
        parameter: `traces[${index}]`,
        functionName: FN,
        value: trace,
        expected: 'a TraceRecord',
      });
    }
    byPrompt.set(trace.promptId, [...(byPrompt.get(trace.promptId) ?? []), trace]);
  });

  const discarded = { rejected: 0, truncated: 0, tooLong: 0, duplicate: 0, overQuota: 0 };
  const kept: TraceRecord[] = [];
  const perPrompt: PromptFilterStats[] = [];
  for (const [promptId, group] of byPrompt) {
    const accepted = group.filter((trace) => trace.accepted);
    discarded.rejected += group.length - accepted.length;
    let candidates = accepted.filter((trace) => {
      if (dropTruncated && trace.finishReason === 'length') {
        discarded.truncated++;
        return false;
      }
      if (trace.tokenIds.length > maxTokens) {
        discarded.tooLong++;
        return false;
      }
      return true;
    });
    if (prefer === 'shorter') {
      candidates = [...candidates].sort(
        (a, b) => a.tokenIds.length - b.tokenIds.length || a.sampleIndex - b.sampleIndex,
      );
    } else if (prefer === 'random') {
      candidates = rng.derive(promptId).shuffle([...candidates]);
    }
    const keptHere: TraceRecord[] = [];
    // Duplicates are judged against every earlier distinct candidate (kept or over quota), so a
    // duplicate is reported as such whatever the quota.
    const seenShingles: Set<string>[] = [];
    for (const trace of candidates) {
      const shingles = dedupe === false ? undefined : wordTrigrams(trace.completion);
      if (
        shingles &&
        dedupe !== false &&
        seenShingles.some((other) => jaccard(shingles, other) >= dedupe)
      ) {
        discarded.duplicate++;
        continue;
      }
      if (shingles) seenShingles.push(shingles);
      if (keptHere.length >= maxPerPrompt) {
        discarded.overQuota++;
        continue;
      }
      keptHere.push(trace);
    }
    kept.push(...keptHere);
    perPrompt.push({
      promptId,
      total: group.length,
      accepted: accepted.length,
      kept: keptHere.length,
      passRate: group.length > 0 ? accepted.length / group.length : 0,
    });
  }
  const accepted = perPrompt.reduce((sum, stats) => sum + stats.accepted, 0);
  return {
    kept,
    report: {
      prompts: perPrompt.length,
      promptsWithAccepted: perPrompt.filter((stats) => stats.accepted > 0).length,
      total: traces.length,
      accepted,
      kept: kept.length,
      discarded,
      meanPassRate: perPrompt.length
        ? perPrompt.reduce((sum, stats) => sum + stats.passRate, 0) / perPrompt.length
        : 0,
      perPrompt,
    },
  };
}

/** Word trigrams (words = whitespace-separated); short texts fall back to their whole word list. */
function wordTrigrams(text: string): Set<string> {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const shingles = new Set<string>();
  if (words.length < 3) {
    shingles.add(words.join(' '));
    return shingles;
  }
  for (let index = 0; index + 3 <= words.length; index++)
    shingles.add(words.slice(index, index + 3).join(' '));
  return shingles;
}

function jaccard(a: Set<string>, b: Set<string>): number {
  let intersection = 0;
  for (const item of a) if (b.has(item)) intersection++;
  const union = a.size + b.size - intersection;
  return union === 0 ? 1 : intersection / union;
}
