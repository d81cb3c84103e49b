import {
  assertSampler,
  type Completion,
  InvalidArgumentError,
  type Prompt,
  RlvrError,
  type Sampler,
  throwIfAborted,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import {
  readSampling,
  rejectAbortedGroup,
  type SamplingOptions,
} from '../sampling/sampled-vote.js';
import { betaStopProbability } from '../sampling/stopping.js';
import { defaultEquals, defaultExtract } from '../vote/defaults.js';
import { checkFunction, safeExtract, tally } from '../vote/majority-vote.js';
import type { EqualsFn, ExtractFn, VoteResult } from '../vote/types.js';

/** What the planner knows about one prompt. */
export type AllocationState = {
  /** Samples drawn so far. */
  samples: number;
  /** Votes of the leading answer and of the runner-up. */
  leaderVotes: number;
  runnerUpVotes: number;
};

/** Planner settings. */
export type AllocationPolicy = {
  /** Samples added to a prompt each time it is picked. */
  roundSize: number;
  /** Prompts whose Beta stop probability reaches this get no more samples. */
  threshold: number;
  /** Cap per prompt. */
  maxPerPrompt: number;
};

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
  validateOptions(policy, {
    parameter: 'policy',
    functionName: 'planAllocationRound',
    known: ['roundSize', 'threshold', 'maxPerPrompt'],
  });
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

/** Options of {@link allocateVotes}. */
export type AllocateVotesOptions = {
  sampler: Sampler;
  prompts: readonly Prompt[];
  /** Total samples to spend across all prompts (an upper bound: confident prompts stop early). */
  totalSamples: number;
  /** Samples per prompt in the first, uniform round. Default 4. */
  initialSamples?: number;
  /** Samples added per pick in later rounds. Default 4. */
  roundSize?: number;
  /** Stop probability at which a prompt counts as decided. Default 0.95. */
  threshold?: number;
  /** Cap per prompt. Default: totalSamples. */
  maxPerPrompt?: number;
  sampling: SamplingOptions;
  extract?: ExtractFn;
  equals?: EqualsFn;
  signal?: AbortSignal;
};

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
  const FN = 'allocateVotes';
  const raw = validateOptions<AllocateVotesOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: [
      'sampler',
      'prompts',
      'totalSamples',
      'initialSamples',
      'roundSize',
      'threshold',
      'maxPerPrompt',
      'sampling',
      'extract',
      'equals',
      'signal',
    ],
  });
  assertSampler(raw.sampler, 'options.sampler');
  const sampler = raw.sampler;
  if (!Array.isArray(raw.prompts) || raw.prompts.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.prompts',
      functionName: FN,
      value: raw.prompts,
      expected: 'a non-empty array of prompts',
    });
  }
  const prompts = raw.prompts;
  const total = validateInteger(raw.totalSamples, {
    parameter: 'options.totalSamples',
    functionName: FN,
    min: prompts.length,
  });
  const initial = Math.min(
    validateInteger(raw.initialSamples ?? 4, {
      parameter: 'options.initialSamples',
      functionName: FN,
      min: 1,
    }),
    Math.floor(total / prompts.length),
  );
  const policy: AllocationPolicy = {
    roundSize: validateInteger(raw.roundSize ?? 4, {
      parameter: 'options.roundSize',
      functionName: FN,
      min: 1,
    }),
    threshold: validateNumber(raw.threshold ?? 0.95, {
      parameter: 'options.threshold',
      functionName: FN,
      min: 0,
      max: 1,
      exclusiveMin: true,
      exclusiveMax: true,
    }),
    maxPerPrompt: validateInteger(raw.maxPerPrompt ?? total, {
      parameter: 'options.maxPerPrompt',
      functionName: FN,
      min: initial,
    }),
  };
  const sampling = readSampling(raw.sampling, FN);
  const maxNewTokens = sampling.maxNewTokens;
  const extract = checkFunction(raw.extract, 'options.extract', FN) ?? defaultExtract;
  const equals = checkFunction(raw.equals, 'options.equals', FN) ?? defaultEquals;

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
