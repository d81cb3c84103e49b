import {
  type Completion,
  createRng,
  InvalidArgumentError,
  type Prompt,
  type RewardInput,
  type SampleRequest,
} from '@rlvr/core';

/** Default BullMQ queue of rollout jobs. */
export const DEFAULT_ROLLOUT_QUEUE = 'rlvr-rollout';

/** The sampling fields of a request a worker applies (everything but prompts, n and seed). */
export type JobSampling = Omit<SampleRequest, 'prompts' | 'n' | 'seed'>;

/** What one rollout job carries: one completion of one prompt under one policy version. */
export type RolloutJobData = {
  /** The policy version (trainer step) whose weights sample this job. */
  policyVersion: number;
  /** sha256 of the version's safetensors in the weight store; `null`: the worker's base checkpoint. */
  weights: string | null;
  prompt: Prompt;
  promptIndex: number;
  /** The (first) sample index of the job: its sample, or 0 for a group job. */
  sampleIndex: number;
  /** Completions the job samples: 1 (a job per sample) or the group size (a job per group). */
  n: number;
  /** The job's own seed: {@link jobSeed} of the request seed and the indices ({@link groupSeed} for a group job). */
  seed: number;
  sampling: JobSampling;
  /**
   * The oldest policy version the job accepts (`createQueueSampler({ maxWeightLag })`): a worker
   * that holds weights of a version in `[oldestVersion, policyVersion]` samples with them instead
   * of loading the job's. Absent: exactly `policyVersion`.
   */
  oldestVersion?: number;
};

/**
 * A completion as rollout workers return it: core's `Completion` plus the policy version whose
 * weights sampled it (the `step` of the `updateWeights` snapshot; 0 for the base checkpoint).
 * GrpoTrainer's asynchronous mode (`maxStaleness`) reads this optional field to measure a group's
 * staleness by the weights actually used rather than those the request named.
 */
export type VersionedCompletion = Completion & { policyVersion: number };

/** The Redis key holding the current policy version of a queue (JSON {@link PolicyPointer}). */
export function policyKey(queue: string): string {
  return `rlvr:${queue}:policy`;
}

/** The current policy: its version and where its weights are. */
export type PolicyPointer = { version: number; weights: string | null; updatedAt: string };

/**
 * The seed of the job sampling completion `sampleIndex` of prompt `promptIndex` for a request with
 * `seed`: deterministic, so a retried job (another worker, after a crash) samples the same tokens,
 * and {@link createPerJobSampler} reproduces a queue run in one process.
 */
export function jobSeed(seed: number, promptIndex: number, sampleIndex: number): number {
  return createRng(seed)
    .derive(`job-${promptIndex}`)
    .derive(sampleIndex)
    .nextInt(2 ** 32);
}

/**
 * The seed of a job sampling the whole group of prompt `promptIndex` (`jobPer: 'group'`); its
 * samples draw from the engine's per-sample streams of that seed.
 */
export function groupSeed(seed: number, promptIndex: number): number {
  return createRng(seed)
    .derive(`group-${promptIndex}`)
    .nextInt(2 ** 32);
}

/** How a request is split into jobs: one per completion, or one per prompt (its whole group). */
export type JobPer = 'sample' | 'group';

/**
 * The BullMQ id of a job: `v{policyVersion}-{requestId}-{promptIndex}-{sampleIndex}`, or
 * `…-{promptIndex}-g` for a group job (BullMQ forbids `:` in custom ids). The same request under the same weights gives the same ids, so a
 * repeated `sample()` (a retry after a crash) finds its jobs instead of adding new ones.
 */
export function rolloutJobId(
  policyVersion: number,
  requestId: string,
  promptIndex: number,
  sampleIndex: number | 'group',
): string {
  const last = sampleIndex === 'group' ? 'g' : sampleIndex;
  return `v${policyVersion}-${requestId}-${promptIndex}-${last}`;
}

const QUEUE_NAME = /^[A-Za-z0-9_-]{1,100}$/;

/** Checks a queue name (letters, digits, `_` and `-`: no `:`, which BullMQ uses in its keys). */
export function validateQueueName(value: unknown, parameter: string, functionName: string): string {
  if (typeof value !== 'string' || !QUEUE_NAME.test(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'a queue name of 1-100 letters, digits, "_" or "-"',
    });
  }
  return value;
}

/** Checks a Redis URL (`redis://` or `rediss://`). */
export function validateRedisUrl(value: unknown, parameter: string, functionName: string): string {
  if (typeof value !== 'string' || !/^rediss?:\/\/./.test(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'a Redis URL such as "redis://127.0.0.1:6379"',
    });
  }
  return value;
}

/** Default BullMQ queue of verifier (reward) jobs. */
export const DEFAULT_VERIFY_QUEUE = 'rlvr-verify';

/** What one verifier job carries: the reward's name on the worker and what it scores. */
export type VerifyJobData = { reward: string; input: RewardInput };

/** What a verifier job returns. */
export type VerifyJobResult = { value: number | null };

/** The BullMQ id of a verifier job: `r-{reward}-{hash of the input}` (same input → same job). */
export function verifyJobId(reward: string, inputHash: string): string {
  return `r-${reward}-${inputHash}`;
}
