import {
  type Completion,
  type Prompt,
  RlvrError,
  throwIfAborted,
  validateInteger,
} from '@rlvr/core';
import {
  custom,
  defineOptions,
  integer,
  number,
  type OptionsInput,
  optional,
  required,
  withDefault,
} from '@rlvr/options';
import { rejectAbortedGroup, SAMPLING_SCHEMA } from '../sampling/sampled-vote.js';
import { betaStopProbability } from '../sampling/stopping.js';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { safeExtract, tally } from '../vote/majority-vote.js';
import type { VoteResult } from '../vote/types.js';
import { ANSWER_FIELDS, SAMPLER_FIELD, SIGNAL_FIELD } from '../vote/vote-fields.js';

/** What the planner knows about one prompt. */
export type AllocationState = {
  /** Samples drawn so far. */
  samples: number;
  /** Votes of the leading answer and of the runner-up. */
  leaderVotes: number;
  runnerUpVotes: number;
};

// Optional in the schema (planAllocationRound checks the keys only, as it always has); all three
// are required by the type.
const count = (description: string) =>
  optional(
    custom<number>(() => true, 'a sample count'),
    { description, defaultText: 'required' },
  );

/**
 * The planner settings of {@link planAllocationRound}, declared once (its keys are checked;
 * `allocateVotes` checks the values it passes).
 */
export const ALLOCATION_POLICY_OPTIONS = defineOptions(
  {
    roundSize: count('Samples added to a prompt each time it is picked.'),
    threshold: optional(
      custom<number>(() => true, 'a stop probability'),
      {
        description: 'Prompts whose Beta stop probability reaches this get no more samples.',
        defaultText: 'required',
      },
    ),
    maxPerPrompt: count('Cap per prompt.'),
  },
  { parameter: 'policy', functionName: 'planAllocationRound' },
);

/** Planner settings (see {@link ALLOCATION_POLICY_OPTIONS}). */
export type AllocationPolicy = Required<OptionsInput<typeof ALLOCATION_POLICY_OPTIONS.schema>>;

/**
 * One round of difficulty-aware allocation (in the spirit of Snell et al. 2024): the prompts whose
 * early vote is most split (lowest Beta stop probability, see `betaStopProbability`) get
 * `roundSize` more samples each, least confident first (ties: lower index), until `remaining` is
 * spent. Confident or capped prompts get nothing. Pure: returns `[promptIndex, samples]` pairs.
 *
 * @example
 * ```ts
 * planAllocationRound([{ samples: 4, leaderVotes: 4, runnerUpVotes: 0 },
 *                      { samples: 4, leaderVotes: 2, runnerUpVotes: 2 }], 8,
 *                     { roundSize: 4, threshold: 0.95, maxPerPrompt: 64 }); // [[1, 4]]
 * ```
 */
export function planAllocationRound(
  states: readonly AllocationState[],
  remaining: number,
  policy: AllocationPolicy,
): [number, number][] {
  ALLOCATION_POLICY_OPTIONS.parse(policy);
  const candidates = states
    .map((state, index) => ({
      index,
      state,
      confidence: betaStopProbability(state.leaderVotes, state.runnerUpVotes),
    }))
    .filter(
      ({ state, confidence }) =>
        confidence < policy.threshold && state.samples < policy.maxPerPrompt,
    )
    .sort((a, b) => a.confidence - b.confidence || a.index - b.index);
  const plan: [number, number][] = [];
  let left = remaining;
  for (const { index, state } of candidates) {
    if (left <= 0) break;
    const count = Math.min(policy.roundSize, policy.maxPerPrompt - state.samples, left);
    if (count <= 0) continue;
    plan.push([index, count]);
    left -= count;
  }
  return plan;
}

const FN = 'allocateVotes';

/**
 * The options of {@link allocateVotes}, declared once: {@link AllocateVotesOptions},
 * {@link ALLOCATE_VOTES_DEFAULTS}, the validation and the README table come from it. The ranges
 * that depend on other options (`totalSamples` ≥ one sample per prompt, `maxPerPrompt` ≥ the
 * first round) are checked next to the parse.
 */
export const ALLOCATE_VOTES_OPTIONS = defineOptions(
  {
    sampler: SAMPLER_FIELD,
    prompts: required(
      custom<readonly Prompt[]>(
        (value) => Array.isArray(value) && value.length > 0,
        'a non-empty array of prompts',
      ),
      'The prompts (text or token ids), passed to the sampler.',
    ),
    // checked after the parse (its range depends on the prompts), so a missing one reads as
    // validateInteger says it; required by the type
    totalSamples: optional(
      custom<number>(() => true, 'an integer >= the number of prompts'),
      {
        description:
          'Total samples to spend across all prompts (an upper bound: confident prompts stop early).',
        defaultText: 'required',
      },
    ),
    initialSamples: withDefault(
      integer({ min: 1 }),
      4,
      'Samples per prompt in the first, uniform round (at most `totalSamples` / prompts).',
    ),
    roundSize: withDefault(integer({ min: 1 }), 4, 'Samples added per pick in later rounds.'),
    threshold: withDefault(
      number({ min: 0, max: 1, exclusiveMin: true, exclusiveMax: true }),
      0.95,
      'Stop probability (Beta criterion) at which a prompt counts as decided.',
    ),
    maxPerPrompt: optional(
      custom<number>(() => true, 'an integer >= the first round'),
      {
        description: 'Cap per prompt (at least the first round).',
        defaultText: '`totalSamples`',
      },
    ),
    sampling: required(SAMPLING_SCHEMA, 'Sampling settings (see `SamplingOptions`).'),
    ...ANSWER_FIELDS,
    signal: SIGNAL_FIELD,
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link allocateVotes} (see {@link ALLOCATE_VOTES_OPTIONS} for each one). */
export type AllocateVotesOptions = Omit<
  OptionsInput<typeof ALLOCATE_VOTES_OPTIONS.schema>,
  'totalSamples'
> & {
  totalSamples: number;
};

/** The defaults of {@link allocateVotes}' options. */
export const ALLOCATE_VOTES_DEFAULTS = ALLOCATE_VOTES_OPTIONS.defaults;

/** Result of {@link allocateVotes}. */
export type AllocateVotesResult = {
  /** One vote per prompt, with the completions it drew. */
  results: (VoteResult & { completions: Completion[]; samplesUsed: number })[];
  samplesUsed: number;
  /** Budget left because every prompt was decided (or capped). */
  unspent: number;
};

/**
 * Difficulty-aware test-time compute over many prompts: a uniform first round, then the rest of the
 * budget goes, round by round, to the prompts whose vote is still split. Prompts where the first
 * samples agree stop early and leave budget for the hard ones.
 *
 * @example
 * ```ts
 * const { results, samplesUsed } = await allocateVotes({ sampler, prompts, totalSamples: 256,
 *   sampling: { maxNewTokens: 256, temperature: 0.8, seed: 0 } });
 * ```
 * @throws {InvalidArgumentError} for bad options (e.g. a budget smaller than one sample per prompt).
 */
export async function allocateVotes(options: AllocateVotesOptions): Promise<AllocateVotesResult> {
  const raw = ALLOCATE_VOTES_OPTIONS.parse(options);
  const { sampler, prompts, sampling, extract = defaultExtract, equals = defaultEquals } = raw;
  const total = validateInteger(raw.totalSamples, {
    parameter: 'options.totalSamples',
    functionName: FN,
    min: prompts.length,
  });
  const initial = Math.min(raw.initialSamples, Math.floor(total / prompts.length));
  const policy: AllocationPolicy = {
    roundSize: raw.roundSize,
    threshold: raw.threshold,
    maxPerPrompt: validateInteger(raw.maxPerPrompt ?? total, {
      parameter: 'options.maxPerPrompt',
      functionName: FN,
      min: initial,
    }),
  };
  const maxNewTokens = sampling.maxNewTokens;

  const completions: Completion[][] = prompts.map(() => []);
  const answers: (string | null)[][] = prompts.map(() => []);
  let used = 0;
  let call = 0;
  const draw = async (indices: number[], n: number) => {
    const seed = sampling.seed === undefined ? undefined : sampling.seed + call;
    call++;
    throwIfAborted(raw.signal, `${FN}()`);
    const groups = await sampler.sample(
      {
        ...sampling,
        maxNewTokens,
        ...(seed === undefined ? {} : { seed }),
        prompts: indices.map((index) => prompts[index]!),
        n,
      },
      raw.signal ? { signal: raw.signal } : undefined,
    );
    // A sampler that resolved despite the abort: nothing of this call is counted.
    throwIfAborted(raw.signal, `${FN}()`);
    if (!Array.isArray(groups) || groups.length !== indices.length) {
      throw new RlvrError(
        'INVALID_ARGUMENT',
        `The sampler passed to ${FN}() returned ${groups?.length} groups for ${indices.length} prompts`,
      );
    }
    for (const group of groups) rejectAbortedGroup(group ?? [], FN);
    indices.forEach((promptIndex, position) => {
      for (const completion of groups[position] ?? []) {
        completions[promptIndex]!.push(completion);
        answers[promptIndex]!.push(safeExtract(extract, completion.text));
        used++;
      }
    });
  };

  await draw(
    prompts.map((_, index) => index),
    initial,
  );
  for (;;) {
    const states = answers.map((list) => {
      const ranked = tally(
        [...list],
        list.map(() => 1),
        equals,
      ).clusters;
      return {
        samples: list.length,
        leaderVotes: ranked[0]?.count ?? 0,
        runnerUpVotes: ranked[1]?.count ?? 0,
      };
    });
    const plan = planAllocationRound(states, total - used, policy);
    if (plan.length === 0) break;
    // One sampler call per distinct sample count (usually one).
    const bySize = new Map<number, number[]>();
    for (const [index, count] of plan) bySize.set(count, [...(bySize.get(count) ?? []), index]);
    for (const [count, indices] of bySize) await draw(indices, count);
  }

  return {
    results: answers.map((list, index) => ({
      ...tally(
        [...list],
        list.map(() => 1),
        equals,
      ),
      completions: completions[index]!,
      samplesUsed: list.length,
    })),
    samplesUsed: used,
    unspent: total - used,
  };
}
