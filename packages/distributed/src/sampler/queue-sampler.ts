import {
  type Completion,
  ErrorCode,
  hashString,
  InvalidArgumentError,
  RlvrError,
  type Sampler,
  stableStringify,
  validateInteger,
  validateOneOf,
  validateOptions,
  type WeightSnapshot,
} from '@rlvr/core';
import { encodeSafetensors } from '@rlvr/model';
import type { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import {
  DEFAULT_ROLLOUT_QUEUE,
  type JobPer,
  type PolicyPointer,
  policyKey,
  type RolloutJobData,
  rolloutJobId,
  type VersionedCompletion,
  validateQueueName,
  validateRedisUrl,
} from '../protocol.js';
import { DEFAULT_RECONNECT_TIMEOUT_MS, JobClient } from '../queue/job-client.js';
import { createLocalWeightStore, type WeightStore } from '../weights/weight-store.js';
import { assembleGroups, planRolloutJobs } from './run-job.js';
import { validateSampleCall } from './validate-request.js';

const FUNCTION = 'createQueueSampler';

/** Options of {@link createQueueSampler}. */
export type QueueSamplerOptions = {
  /** Redis URL, e.g. `redis://127.0.0.1:6379` (the server needs `maxmemory-policy noeviction`). */
  redis: string;
  /** BullMQ queue name the rollout workers listen on. Default `'rlvr-rollout'`. */
  queue?: string;
  /**
   * Where updated weights go, shared with the workers: a folder path or a {@link WeightStore}.
   * Without it the sampler has no `updateWeights` (workers keep their base checkpoint).
   */
  weights?: string | WeightStore;
  /** Model name for logs. Default `queue:<queue>`. */
  modelId?: string;
  /** Attempts per job before it lands in the failed set (a crashed or killed worker's job is retried). Default 3. */
  attempts?: number;
  /** Delay before a failed attempt is retried, in ms (exponential). Default 1000. */
  backoffMs?: number;
  /**
   * What a job that failed every attempt does to its `sample()` call. `'reject'` (default): the
   * call rejects with {@link QueueJobFailedError}. `'abort-group'`: the call resolves, and the
   * failed completion has `finishReason: 'abort'`, so its group is *aborted* (core's contract):
   * GrpoTrainer skips that prompt and counts it (`skipped/aborted_groups`), the rest of the step
   * trains. Every failure is reported to `onJobFailed`.
   */
  failedJobs?: 'reject' | 'abort-group';
  /** Called with each job that failed every attempt (job id, the worker's reason). */
  onJobFailed?: (error: QueueJobFailedError) => void;
  /**
   * `'sample'` (default): a job per completion (finest load balancing; a worker samples one
   * sequence at a time). `'group'`: a job per prompt, its G completions batched on one worker
   * (faster per completion on small models; fewer, larger jobs).
   */
  jobPer?: JobPer;
  /**
   * How long a call waits for a lost Redis (a restart, a network cut) to come back, in ms, before
   * it rejects with {@link QueueUnavailableError}; 0 rejects at once. Default 30000. Once Redis
   * is back, the call adds the jobs it has no result for again under the same ids: a Redis that
   * kept them (persistence) dedupes them, one that lost them reruns them with the same seeds, so
   * the call resolves with the completions it would have had without the restart.
   */
  reconnectTimeoutMs?: number;
  /**
   * Asynchronous training: a worker may sample a job with the weights it already holds when they
   * are at most this many weight updates older than the job's (it skips loading the new version
   * for now). Every completion reports the version that sampled it (`policyVersion`, see
   * {@link VersionedCompletion}), and GrpoTrainer with `maxStaleness ≥ 1` drops groups that end up
   * older than it allows (`async/dropped_stale_groups`). Default 0: every job is sampled with
   * exactly its version (deterministic, required for a synchronous trainer).
   */
  maxWeightLag?: number;
};

const KNOWN = [
  'redis',
  'queue',
  'weights',
  'modelId',
  'attempts',
  'backoffMs',
  'failedJobs',
  'onJobFailed',
  'jobPer',
  'reconnectTimeoutMs',
  'maxWeightLag',
];

/** A {@link Sampler} backed by a BullMQ queue, with the current policy version. */
export interface QueueSampler extends Sampler {
  readonly queue: string;
  /** The policy version jobs are sampled with (the step of the last `updateWeights`; 0 before). */
  readonly policyVersion: number;
  /** Stops listening and closes the Redis connections (queued jobs stay queued). */
  close(): Promise<void>;
}

type Resolved = {
  url: string;
  queue: string;
  store: WeightStore | undefined;
  modelId: string;
  attempts: number;
  backoffMs: number;
  failedJobs: 'reject' | 'abort-group';
  onJobFailed: ((error: QueueJobFailedError) => void) | undefined;
  jobPer: JobPer;
  reconnectTimeoutMs: number;
  maxWeightLag: number;
};

function resolveOptions(options: QueueSamplerOptions): Resolved {
  const raw = validateOptions<QueueSamplerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: KNOWN,
  });
  const url = validateRedisUrl(raw.redis, 'options.redis', FUNCTION);
  const queue = validateQueueName(raw.queue ?? DEFAULT_ROLLOUT_QUEUE, 'options.queue', FUNCTION);
  let store: WeightStore | undefined;
  if (typeof raw.weights === 'string') store = createLocalWeightStore(raw.weights);
  else if (raw.weights !== undefined) {
    const candidate = raw.weights as WeightStore;
    if (typeof candidate?.put !== 'function' || typeof candidate.get !== 'function') {
      throw new InvalidArgumentError({
        parameter: 'options.weights',
        functionName: FUNCTION,
        value: raw.weights,
        expected: 'a folder path or a WeightStore (put/get)',
      });
    }
    store = candidate;
  }
  if (raw.modelId !== undefined && typeof raw.modelId !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.modelId',
      functionName: FUNCTION,
      value: raw.modelId,
      expected: 'a string',
    });
  }
  const attempts = validateInteger(raw.attempts ?? 3, {
    parameter: 'options.attempts',
    functionName: FUNCTION,
    min: 1,
    max: 100,
  });
  const backoffMs = validateInteger(raw.backoffMs ?? 1000, {
    parameter: 'options.backoffMs',
    functionName: FUNCTION,
    min: 0,
  });
  const failedJobs = validateOneOf(raw.failedJobs ?? 'reject', ['reject', 'abort-group'] as const, {
    parameter: 'options.failedJobs',
    functionName: FUNCTION,
  });
  if (raw.onJobFailed !== undefined && typeof raw.onJobFailed !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.onJobFailed',
      functionName: FUNCTION,
      value: raw.onJobFailed,
      expected: 'a function',
    });
  }
  return {
    url,
    queue,
    store,
    modelId: raw.modelId ?? `queue:${queue}`,
    attempts,
    backoffMs,
    failedJobs,
    onJobFailed: raw.onJobFailed,
    jobPer: validateOneOf(raw.jobPer ?? 'sample', ['sample', 'group'] as const, {
      parameter: 'options.jobPer',
      functionName: FUNCTION,
    }),
    reconnectTimeoutMs: validateInteger(raw.reconnectTimeoutMs ?? DEFAULT_RECONNECT_TIMEOUT_MS, {
      parameter: 'options.reconnectTimeoutMs',
      functionName: FUNCTION,
      min: 0,
    }),
    maxWeightLag: validateInteger(raw.maxWeightLag ?? 0, {
      parameter: 'options.maxWeightLag',
      functionName: FUNCTION,
      min: 0,
    }),
  };
}

/**
 * Creates a core {@link Sampler} whose completions are sampled by `rlvr-worker rollout` processes,
 * anywhere that reaches the same Redis: one BullMQ job per (prompt, sample index), with an
 * idempotent id `v{policyVersion}-{requestId}-{promptIndex}-{sampleIndex}` and a seed derived from
 * the request seed and the indices ({@link jobSeed}), so a retried job samples the same tokens.
 * `updateWeights` writes the weights as content-addressed safetensors to `options.weights` (a
 * folder the workers share) and records the version in Redis: weights never go through Redis.
 *
 * Abort: an aborted `options.signal` rejects with `AbortedError`; the call's queued jobs are
 * removed and results of running ones are ignored. A job that fails `attempts` times rejects the
 * call with {@link QueueJobFailedError} (job id and the worker's reason).
 *
 * @example
 * ```ts
 * const sampler = await createQueueSampler({ redis: 'redis://10.0.0.5:6379', weights: '/shared/weights' });
 * const grpo = await createGrpoTrainer({ model, sampler, dataset, rewards, config });
 * ```
 * @throws {InvalidArgumentError} for bad options; {@link QueueUnavailableError} when Redis is
 * unreachable or its `maxmemory-policy` is not `noeviction`.
 */
export async function createQueueSampler(options: QueueSamplerOptions): Promise<QueueSampler> {
  const resolved = resolveOptions(options);
  const { url, queue: name, store } = resolved;
  let policy: PolicyPointer = { version: 0, weights: null, updatedAt: new Date().toISOString() };
  const client = await JobClient.open<RolloutJobData, Completion[]>(url, name, {
    ...resolved,
    // a restarted Redis lost the pointer, or missed an update while away: write it again
    onReconnect: async () => {
      if (policy.weights !== null) {
        await client.producer.set(policyKey(name), JSON.stringify(policy));
      }
    },
  });
  /** A failed job's stand-in under `failedJobs: 'abort-group'`: its group is aborted (skipped). */
  const abortedCompletions = (error: QueueJobFailedError, data: RolloutJobData): Completion[] => {
    resolved.onJobFailed?.(error);
    // no model saw a prompt for them: empty prompt ids (consumers drop the group before use)
    return Array.from({ length: data.n }, () => ({
      text: '',
      tokenIds: [],
      logprobs: [],
      promptTokenIds: [],
      finishReason: 'abort' as const,
    }));
  };
  const onFailed =
    resolved.failedJobs === 'abort-group'
      ? abortedCompletions
      : resolved.onJobFailed
        ? (error: QueueJobFailedError): Completion[] => {
            resolved.onJobFailed!(error);
            throw error;
          }
        : undefined;
  /** Versions pushed so far (the base checkpoint is 0), for `maxWeightLag`'s oldest accepted one. */
  const pushed: number[] = [0];

  const sampler: QueueSampler = {
    specificationVersion: 'v1',
    modelId: resolved.modelId,
    queue: name,
    get policyVersion() {
      return policy.version;
    },
    async sample(request, callOptions) {
      const operation = 'QueueSampler.sample()';
      const call = validateSampleCall(request, callOptions, 'QueueSampler.sample');
      client.assertOpen(operation);
      const { prompts, n, seed, sampling, signal } = call;
      const current = policy;
      const requestId = hashString(
        stableStringify({ prompts, n, seed, sampling, weights: current.weights }),
      );
      const jobs = planRolloutJobs(call, resolved.jobPer);
      const oldestVersion = pushed[Math.max(0, pushed.length - 1 - resolved.maxWeightLag)]!;
      const specs = jobs.map((job) => ({
        id: rolloutJobId(
          current.version,
          requestId,
          job.promptIndex,
          resolved.jobPer === 'group' ? 'group' : job.sampleIndex,
        ),
        data: {
          ...job,
          policyVersion: current.version,
          weights: current.weights,
          ...(resolved.maxWeightLag > 0 ? { oldestVersion } : {}),
        },
      }));
      const results = await client.run(specs, signal, operation, onFailed);
      results.forEach((result, index) => {
        if (!Array.isArray(result) || result.length !== jobs[index]!.n) {
          throw new RlvrError(
            ErrorCode.UNAVAILABLE,
            `${operation}: job '${specs[index]!.id}' returned ${Array.isArray(result) ? `${result.length} completions` : typeof result} instead of ${jobs[index]!.n}; are the workers running the same @rlvr/distributed version as the trainer?`,
          );
        }
      });
      return assembleGroups(jobs, results, prompts.length);
    },
    close: () => client.close(),
  };
  if (store) {
    sampler.updateWeights = async (snapshot: WeightSnapshot) => {
      const functionName = 'QueueSampler.updateWeights';
      const raw = validateOptions<WeightSnapshot>(snapshot, {
        parameter: 'snapshot',
        functionName,
        known: ['step', 'tensors'],
      });
      const step = validateInteger(raw.step, { parameter: 'snapshot.step', functionName, min: 0 });
      if (!Array.isArray(raw.tensors) || raw.tensors.length === 0) {
        throw new InvalidArgumentError({
          parameter: 'snapshot.tensors',
          functionName,
          value: raw.tensors,
          expected: 'a non-empty array of named tensors',
        });
      }
      client.assertOpen(`${functionName}()`);
      const digest = await store.put(encodeSafetensors(raw.tensors));
      const next: PolicyPointer = {
        version: step,
        weights: digest,
        updatedAt: new Date().toISOString(),
      };
      // jobs name the weights themselves: the pointer in Redis is for workers and operators
      policy = next;
      pushed.push(step);
      if (pushed.length > resolved.maxWeightLag + 1) pushed.shift();
      try {
        await client.producer.set(policyKey(name), JSON.stringify(next));
      } catch (error) {
        // Redis is away (a restart): the pointer is written again once it is back
        if (!client.connected) return;
        throw new RlvrError(
          ErrorCode.UNAVAILABLE,
          `${functionName}(): Redis did not take the new policy version`,
          {
            cause: error,
          },
        );
      }
    };
  }
  return sampler;
}
