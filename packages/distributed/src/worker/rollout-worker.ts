import { validateInteger, validateOptions } from '@rlvr/core';
import { DEFAULT_ROLLOUT_QUEUE, validateQueueName, validateRedisUrl } from '../protocol.js';
import {
  pathOption,
  processorFile,
  type RunningWorker,
  startSandboxedWorker,
  TUNING_KEYS,
  type WorkerTuning,
} from './sandboxed-worker.js';
import { WORKER_ENV } from './worker-env.js';

const FUNCTION = 'startRolloutWorker';

/** Options of {@link startRolloutWorker} (the `rlvr-worker rollout` flags). */
export type RolloutWorkerOptions = WorkerTuning & {
  /** Redis URL shared with the trainer. */
  redis: string;
  /** Folder of the base checkpoint (config, tokenizer, weights): the model the trainer starts from. */
  checkpoint: string;
  /** The weight folder shared with the trainer (`createQueueSampler({ weights })`). */
  weights: string;
  /** Queue name. Default `'rlvr-rollout'`. */
  queue?: string;
  /** ONNX Runtime threads per child process. Default 1. */
  threads?: number;
};

/**
 * Starts a BullMQ worker that samples rollout jobs with `@rlvr/rollout`'s ONNX sampler in sandboxed
 * child processes (one per concurrent job), loading the policy version each job names from the
 * shared weight folder.
 * @throws {QueueUnavailableError} when Redis is unreachable or may evict jobs.
 */
export async function startRolloutWorker(options: RolloutWorkerOptions): Promise<RunningWorker> {
  const raw = validateOptions<RolloutWorkerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: ['redis', 'checkpoint', 'weights', 'queue', 'threads', ...TUNING_KEYS],
  });
  const url = validateRedisUrl(raw.redis, 'options.redis', FUNCTION);
  const checkpoint = pathOption(
    raw.checkpoint,
    'options.checkpoint',
    FUNCTION,
    'a checkpoint folder',
  );
  const weights = pathOption(raw.weights, 'options.weights', FUNCTION, 'a weight folder');
  const queue = validateQueueName(raw.queue ?? DEFAULT_ROLLOUT_QUEUE, 'options.queue', FUNCTION);
  const threads = validateInteger(raw.threads ?? 1, {
    parameter: 'options.threads',
    functionName: FUNCTION,
    min: 1,
  });
  return startSandboxedWorker({
    url,
    queue,
    processor: processorFile('rollout-processor'),
    env: {
      [WORKER_ENV.checkpoint]: checkpoint,
      [WORKER_ENV.weights]: weights,
      [WORKER_ENV.threads]: String(threads),
    },
    tuning: raw,
    functionName: FUNCTION,
  });
}
