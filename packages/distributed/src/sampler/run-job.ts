import {
  assertSampler,
  type Completion,
  type SampleRequest,
  type Sampler,
  throwIfAborted,
} from '@rlvr/core';
import { jobSeed, type RolloutJobData } from '../protocol.js';
import { validateSampleCall } from './validate-request.js';

/**
 * What a rollout worker does with one job: one completion of `data.prompt` with the job's seed.
 * Exported so that a local run can reproduce a distributed one exactly ({@link createPerJobSampler}).
 */
export async function runRolloutJob(
  sampler: Sampler,
  data: Pick<RolloutJobData, 'prompt' | 'seed' | 'sampling'>,
  signal?: AbortSignal,
): Promise<Completion> {
  const request: SampleRequest = {
    ...data.sampling,
    prompts: [data.prompt],
    n: 1,
    seed: data.seed,
  };
  const groups = await sampler.sample(request, signal ? { signal } : undefined);
  return groups[0]![0]!;
}

/**
 * A {@link Sampler} that samples in this process exactly as a queue sampler's workers would: one
 * call per (prompt, sample index), seeded with {@link jobSeed}. Same seed and weights → the same
 * completions as `createQueueSampler` with workers built on `inner`'s engine: the local baseline of
 * a distributed run. `updateWeights` and `close` go to `inner`.
 */
export function createPerJobSampler(inner: Sampler): Sampler {
  assertSampler(inner, 'inner');
  const sampler: Sampler = {
    specificationVersion: 'v1',
    modelId: inner.modelId,
    async sample(request, callOptions) {
      const { signal, seed, sampling, prompts, n } = validateSampleCall(
        request,
        callOptions,
        'PerJobSampler.sample',
      );
      const groups: Completion[][] = [];
      for (const [promptIndex, prompt] of prompts.entries()) {
        const group: Completion[] = [];
        for (let sampleIndex = 0; sampleIndex < n; sampleIndex++) {
          const data = { prompt, sampling, seed: jobSeed(seed, promptIndex, sampleIndex) };
          group.push(await runRolloutJob(inner, data, signal));
        }
        groups.push(group);
      }
      throwIfAborted(signal, 'PerJobSampler.sample()');
      return groups;
    },
  };
  if (inner.updateWeights) sampler.updateWeights = (snapshot) => inner.updateWeights!(snapshot);
  if (inner.close) sampler.close = () => inner.close!();
  return sampler;
}
