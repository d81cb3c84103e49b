import {
  assertSampler,
  type Completion,
  type Prompt,
  type SampleRequest,
  type Sampler,
  throwIfAborted,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import {
  groupSeed,
  type JobPer,
  type JobSampling,
  jobSeed,
  type RolloutJobData,
} from '../protocol.js';
import { validateSampleCall } from './validate-request.js';

/**
 * What a rollout worker does with one job: `data.n` completions of `data.prompt` with the job's
 * seed. Exported so that a local run can reproduce a distributed one exactly
 * ({@link createPerJobSampler}).
 */
export async function runRolloutJob(
  sampler: Sampler,
  data: Pick<RolloutJobData, 'prompt' | 'seed' | 'sampling' | 'n'>,
  signal?: AbortSignal,
): Promise<Completion[]> {
  const request: SampleRequest = {
    ...data.sampling,
    prompts: [data.prompt],
    n: data.n,
    seed: data.seed,
  };
  const groups = await sampler.sample(request, signal ? { signal } : undefined);
  return groups[0]!;
}

/** One job of a planned request (everything but the policy version and weights). */
export type PlannedJob = Pick<
  RolloutJobData,
  'prompt' | 'promptIndex' | 'sampleIndex' | 'n' | 'seed' | 'sampling'
>;

/**
 * Splits a request into jobs: one per (prompt, sample index) seeded with {@link jobSeed}, or one
 * per prompt (`jobPer: 'group'`) seeded with {@link groupSeed}. Jobs come in result order.
 */
export function planRolloutJobs(
  call: { prompts: readonly Prompt[]; n: number; seed: number; sampling: JobSampling },
  jobPer: JobPer,
): PlannedJob[] {
  const { prompts, n, seed, sampling } = call;
  return prompts.flatMap((prompt, promptIndex) =>
    jobPer === 'group'
      ? [{ prompt, promptIndex, sampleIndex: 0, n, seed: groupSeed(seed, promptIndex), sampling }]
      : Array.from({ length: n }, (_, sampleIndex) => ({
          prompt,
          promptIndex,
          sampleIndex,
          n: 1,
          seed: jobSeed(seed, promptIndex, sampleIndex),
          sampling,
        })),
  );
}

/** Puts job results (in plan order) back into `result[promptIndex][sampleIndex]`. */
export function assembleGroups(
  jobs: readonly PlannedJob[],
  results: readonly Completion[][],
  promptCount: number,
): Completion[][] {
  const groups: Completion[][] = Array.from({ length: promptCount }, () => []);
  jobs.forEach((job, index) => {
    groups[job.promptIndex]!.push(...results[index]!);
  });
  return groups;
}

/**
 * A {@link Sampler} that samples in this process exactly as a queue sampler's workers would: one
 * call per job ({@link planRolloutJobs}; `options.jobPer` as given to `createQueueSampler`). Same
 * seed and weights → the same completions as `createQueueSampler` with workers built on `inner`'s
 * engine: the local baseline of a distributed run. `updateWeights` and `close` go to `inner`.
 */
export function createPerJobSampler(inner: Sampler, options?: { jobPer?: JobPer }): Sampler {
  assertSampler(inner, 'inner');
  const { jobPer: rawJobPer } = validateOptions<{ jobPer?: JobPer }>(options, {
    parameter: 'options',
    functionName: 'createPerJobSampler',
    known: ['jobPer'],
  });
  const jobPer = validateOneOf(rawJobPer ?? 'sample', ['sample', 'group'] as const, {
    parameter: 'options.jobPer',
    functionName: 'createPerJobSampler',
  });
  const sampler: Sampler = {
    specificationVersion: 'v1',
    modelId: inner.modelId,
    async sample(request, callOptions) {
      const call = validateSampleCall(request, callOptions, 'PerJobSampler.sample');
      const jobs = planRolloutJobs(call, jobPer);
      const results: Completion[][] = [];
      for (const job of jobs) results.push(await runRolloutJob(inner, job, call.signal));
      throwIfAborted(call.signal, 'PerJobSampler.sample()');
      return assembleGroups(jobs, results, call.prompts.length);
    },
  };
  if (inner.updateWeights) sampler.updateWeights = (snapshot) => inner.updateWeights!(snapshot);
  if (inner.close) sampler.close = () => inner.close!();
  return sampler;
}
