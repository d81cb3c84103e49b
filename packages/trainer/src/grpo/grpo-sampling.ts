import {
  type Completion,
  createRng,
  filterGroups,
  InvalidArgumentError,
  isAbortedGroup,
  type SampleRequest,
  ShapeMismatchError,
  softOverlongPenalty,
  type Trajectory,
  type TrajectoryRequest,
  throwIfAborted,
  validateTrajectory,
} from '@rlvr/core';
import { multiTurnSampler } from './environment-options.js';
import { combinedRewards } from './grpo-advantages.js';
import type { PromptRecord } from './prompt-dataset.js';
import type { RunContext } from './run-context.js';

/** One scored completion. @internal */
export type Sample = {
  completion: Completion;
  promptIds: number[];
  /** Each reward function's value (null: not applicable / non-finite), then `overlong`. */
  rewards: (number | null)[];
};

/** The G samples of one prompt. @internal */
export type Group = { record: PromptRecord; samples: Sample[] };

/** What the sampling phase of one step produced. @internal */
export type Collected = {
  /** Every scored group (aborted ones excluded). */
  generated: Group[];
  /** The groups to train on (after dynamic sampling's filter). */
  kept: Group[];
  rounds: number;
  abortedGroups: number;
  nonFiniteRewards: number;
  nonFiniteLogprobs: number;
  generatedTokens: number;
  rolloutMs: number;
  rewardMs: number;
  /** Asynchronous GRPO: the staleness of every admitted group, and the groups dropped as too stale. */
  staleness: number[];
  droppedStale: number;
};

/**
 * Where a sampling round's groups come from: by default a request issued now (staleness 0); in
 * asynchronous GRPO, a request issued up to `maxStaleness` steps ago. @internal
 */
export type RoundSource = (signal: AbortSignal | undefined) => Promise<{
  records: PromptRecord[];
  result: unknown;
  /** Policy versions between the weights that sampled a group and the current ones. */
  staleness: (completions: readonly Completion[]) => number;
}>;

const OPERATION = 'GrpoTrainer.step()';
const FN = 'GrpoTrainer.step';

/** The next `count` prompts in the (per-epoch shuffled) data order. @internal */
export function nextPrompts(run: RunContext, count: number): PromptRecord[] {
  const out: PromptRecord[] = [];
  for (let index = 0; index < count; index++) {
    if (run.cursor.position >= run.dataset.length) {
      run.cursor = { epoch: run.cursor.epoch + 1, position: 0 };
    }
    if (run.order?.epoch !== run.cursor.epoch) {
      const indices = run.dataset.map((_, i) => i);
      run.order = {
        epoch: run.cursor.epoch,
        indices: run.config.shuffle
          ? createRng(run.config.seed).derive(`data-epoch-${run.cursor.epoch}`).shuffle(indices)
          : indices,
      };
    }
    out.push(run.dataset[run.order.indices[run.cursor.position]!]!);
    run.cursor.position += 1;
  }
  return out;
}

/** The sampler request for `records` (draws its seed from the run's RNG). @internal */
export function request(run: RunContext, records: PromptRecord[]): SampleRequest {
  const { config } = run;
  return {
    prompts: records.map((record) => record.prompt),
    n: config.groupSize,
    maxNewTokens: config.maxNewTokens,
    temperature: config.temperature,
    ...(config.topP === undefined ? {} : { topP: config.topP }),
    ...(config.topK === undefined ? {} : { topK: config.topK }),
    ...(config.minP === undefined ? {} : { minP: config.minP }),
    ...(config.repetitionPenalty === undefined
      ? {}
      : { repetitionPenalty: config.repetitionPenalty }),
    ...(config.stop === undefined ? {} : { stop: config.stop }),
    seed: run.rng.nextUint32(),
  };
}

/** The multi-turn request for `records` (same sampling fields and seed draw as {@link request}). @internal */
export function trajectoryRequest(run: RunContext, records: PromptRecord[]): TrajectoryRequest {
  const { prompts: _prompts, ...sampling } = request(run, records);
  return {
    ...sampling,
    prompts: records.map(({ id: _id, prompt, answer, ...metadata }) => ({
      prompt,
      ...(answer === undefined ? {} : { answer }),
      metadata,
    })),
    environment: run.environment!,
    maxTurns: run.config.maxTurns!,
    maxTotalTokens: run.config.maxTotalTokens!,
  };
}

/** True when `completion` is a multi-turn trajectory (it has a policy mask). @internal */
export function isTrajectory(completion: Completion): completion is Trajectory {
  return Array.isArray((completion as Partial<Trajectory>).policyMask);
}

function checkCompletion(completion: Completion, where: string): void {
  if (
    completion === null ||
    typeof completion !== 'object' ||
    !Array.isArray(completion.tokenIds) ||
    !Array.isArray(completion.logprobs) ||
    completion.logprobs.length !== completion.tokenIds.length
  ) {
    throw new ShapeMismatchError({
      parameter: where,
      functionName: FN,
      expected: 'a Completion with one logprob per token id',
      actual:
        completion && Array.isArray(completion.tokenIds)
          ? `${completion.tokenIds.length} token ids, ${completion.logprobs?.length} logprobs`
          : String(completion),
    });
  }
  // core's Completion contract: a served model's numbers are not behaviour logprobs, and a
  // text-only completion has no tokens to train on — GRPO refuses both
  if (completion.behaviourLogprobs === false) {
    throw new InvalidArgumentError({
      parameter: `${where}.behaviourLogprobs`,
      functionName: FN,
      value: false,
      expected:
        'behaviour logprobs (the sampler marks these as not: a served model returns its own numbers; GRPO needs the log-probabilities of the distribution each token was drawn from — pass behaviourLogprobs: true to the sampler if the server returns them)',
    });
  }
  if (
    completion.tokenIds.length === 0 &&
    typeof completion.text === 'string' &&
    completion.text !== ''
  ) {
    throw new InvalidArgumentError({
      parameter: `${where}.tokenIds`,
      functionName: FN,
      value: [],
      expected:
        'the token ids of the completion (a text-only completion cannot be trained on: serve the model with token ids, e.g. vLLM return_tokens_as_token_ids)',
    });
  }
}

function checkSamplerOutput(run: RunContext, result: unknown, records: PromptRecord[]): Group[] {
  if (!Array.isArray(result) || result.length !== records.length) {
    throw new ShapeMismatchError({
      parameter: 'sampler.sample() result',
      functionName: FN,
      expected: `${records.length} groups (one per prompt)`,
      actual: Array.isArray(result) ? `${result.length} groups` : typeof result,
    });
  }
  return records.map((record, groupIndex) => {
    const group = result[groupIndex] as Completion[];
    if (!Array.isArray(group) || group.length !== run.config.groupSize) {
      throw new ShapeMismatchError({
        parameter: `sampler.sample() result[${groupIndex}]`,
        functionName: FN,
        expected: `${run.config.groupSize} completions (groupSize)`,
        actual: Array.isArray(group) ? `${group.length} completions` : typeof group,
      });
    }
    let encoded: number[] | undefined;
    // An aborted group is dropped before anything reads its prompt ids (a remote sampler's
    // stand-in completions need not carry them).
    const aborted = isAbortedGroup(group);
    const samples = group.map((completion, sampleIndex) => {
      const where = `sampler.sample() result[${groupIndex}][${sampleIndex}]`;
      checkCompletion(completion, where);
      if (run.environment && !aborted) {
        if (!isTrajectory(completion)) {
          throw new InvalidArgumentError({
            parameter: where,
            functionName: FN,
            value: completion,
            expected: 'a Trajectory (sampleTrajectories() result) since options.environment is set',
          });
        }
        validateTrajectory(completion, where, FN);
      }
      let promptIds = completion.promptTokenIds;
      if (promptIds === undefined && aborted) promptIds = [];
      if (promptIds === undefined) {
        if (run.tokenizer === undefined) {
          throw new InvalidArgumentError({
            parameter: 'tokenizer',
            functionName: FN,
            value: undefined,
            expected: 'a tokenizer to encode prompts, since the sampler reports no promptTokenIds',
          });
        }
        encoded ??= run.tokenizer.encode(record.prompt);
        promptIds = encoded;
      }
      return { completion, promptIds, rewards: [] };
    });
    return { record, samples };
  });
}

async function score(run: RunContext, groups: Group[]): Promise<number> {
  let nonFinite = 0;
  const jobs: Promise<void>[] = [];
  for (const group of groups) {
    const { id, prompt, answer, ...metadata } = group.record;
    for (const sample of group.samples) {
      const trajectory = isTrajectory(sample.completion) ? sample.completion : undefined;
      const input = {
        prompt,
        // multi-turn: reward functions score the final state (the last turn, the trajectory)
        completion: trajectory ? (trajectory.turns.at(-1)?.text ?? '') : sample.completion.text,
        ...(trajectory ? { trajectory } : {}),
        answer,
        promptId: id,
        finishReason: sample.completion.finishReason,
        completionTokens: sample.completion.tokenIds.length,
        metadata,
      };
      sample.rewards = new Array(run.columns.length).fill(null);
      run.rewards.forEach((reward, column) => {
        jobs.push(
          Promise.resolve(reward.fn(input)).then((value) => {
            if (value === null) return;
            if (typeof value !== 'number') {
              throw new InvalidArgumentError({
                parameter: `rewards[${column}] (${reward.name}) result`,
                functionName: FN,
                value,
                expected: 'a number or null',
              });
            }
            if (!Number.isFinite(value)) nonFinite += 1;
            else sample.rewards[column] = value;
          }),
        );
      });
      if (run.config.overlong) {
        sample.rewards[run.rewards.length] = softOverlongPenalty(
          sample.completion.tokenIds.length,
          run.config.overlong,
        );
      }
    }
  }
  await Promise.all(jobs);
  return nonFinite;
}

/** A round issued now, at the current weights. */
function syncSource(run: RunContext): RoundSource {
  return async (signal) => {
    const records = nextPrompts(run, run.config.promptsPerStep);
    const options = signal ? { signal } : undefined;
    const result = run.environment
      ? await multiTurnSampler(run.sampler).sampleTrajectories(
          trajectoryRequest(run, records),
          options,
        )
      : await run.sampler.sample(request(run, records), options);
    return { records, result, staleness: () => 0 };
  };
}

/**
 * The sampling phase of a step: rounds of sample → check → drop aborted groups → score → drop
 * groups with non-finite behaviour logprobs → dynamic-sampling filter, until `promptsPerStep`
 * groups are kept or the rounds are spent. Checks `signal` between phases.
 * @internal
 */
export async function collectGroups(
  run: RunContext,
  signal: AbortSignal | undefined,
  source: RoundSource = syncSource(run),
): Promise<Collected> {
  const { config } = run;
  const out: Collected = {
    generated: [],
    kept: [],
    rounds: 0,
    abortedGroups: 0,
    nonFiniteRewards: 0,
    nonFiniteLogprobs: 0,
    generatedTokens: 0,
    rolloutMs: 0,
    rewardMs: 0,
    staleness: [],
    droppedStale: 0,
  };
  const maxRounds = config.dynamic?.maxRounds ?? 1;
  while (out.rounds < maxRounds && out.kept.length < config.promptsPerStep) {
    throwIfAborted(signal, OPERATION);
    out.rounds += 1;
    const started = performance.now();
    const { records, result, staleness } = await source(signal);
    out.rolloutMs += performance.now() - started;
    throwIfAborted(signal, OPERATION); // a sampler that resolved after the abort
    const groups = checkSamplerOutput(run, result, records).filter((group) => {
      const completions = group.samples.map((sample) => sample.completion);
      const aborted = isAbortedGroup(completions);
      if (aborted) out.abortedGroups += 1;
      if (aborted || config.maxStaleness === 0) return !aborted;
      const age = staleness(completions);
      if (age > config.maxStaleness) {
        out.droppedStale += 1;
        return false;
      }
      out.staleness.push(age);
      return true;
    });
    for (const group of groups) {
      for (const sample of group.samples) out.generatedTokens += sample.completion.tokenIds.length;
    }
    const scoreStarted = performance.now();
    out.nonFiniteRewards += await score(run, groups);
    out.rewardMs += performance.now() - scoreStarted;
    throwIfAborted(signal, OPERATION);
    const usable = groups.filter((group) => {
      const bad = group.samples.some(
        (sample) => !sample.completion.logprobs.every(Number.isFinite),
      );
      if (bad) out.nonFiniteLogprobs += 1;
      return !bad;
    });
    out.generated.push(...groups);
    if (config.dynamic) {
      const filtered = filterGroups(
        usable.map((group) => combinedRewards(group, run.weights)),
        { minStd: config.dynamic.minStd },
      );
      out.kept.push(...filtered.keptIndices.map((index) => usable[index]!));
    } else {
      out.kept.push(...usable);
    }
  }
  if (config.dynamic && out.kept.length > config.promptsPerStep) {
    out.kept.length = config.promptsPerStep;
  }
  return out;
}
