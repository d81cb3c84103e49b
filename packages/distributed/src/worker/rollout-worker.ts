import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, validateInteger, validateOptions } from '@rlvr/core';
import { type Job, Worker } from 'bullmq';
import { DEFAULT_ROLLOUT_QUEUE, validateQueueName, validateRedisUrl } from '../protocol.js';
import { connectRedis } from '../redis/connection.js';
import { WORKER_ENV } from './worker-env.js';

const FUNCTION = 'startRolloutWorker';

/** Options of {@link startRolloutWorker} (the `rlvr-worker rollout` flags). */
export type RolloutWorkerOptions = {
  /** Redis URL shared with the trainer. */
  redis: string;
  /** Folder of the base checkpoint (config, tokenizer, weights): the same model the trainer starts from. */
  checkpoint: string;
  /** The weight folder shared with the trainer (`createQueueSampler({ weights })`). */
  weights: string;
  /** Queue name. Default `'rlvr-rollout'`. */
  queue?: string;
  /** Jobs in flight, each in its own child process. Default 1. */
  concurrency?: number;
  /** ONNX Runtime threads per child process. Default 1. */
  threads?: number;
  /**
   * How long a job's lock lasts without renewal, in ms (default 60 s). The parent renews it every
   * half period while a child computes; if this process dies (kill -9), the job is handed to
   * another worker once the lock expires and a stalled check runs (`stalledIntervalMs`).
   */
  lockDurationMs?: number;
  /** How often this worker looks for stalled jobs of dead workers, in ms. Default 30 s. */
  stalledIntervalMs?: number;
};

const KNOWN = [
  'redis',
  'checkpoint',
  'weights',
  'queue',
  'concurrency',
  'threads',
  'lockDurationMs',
  'stalledIntervalMs',
];

/** A running rollout worker. */
export type RolloutWorker = {
  readonly queue: string;
  /** Events for logs: a finished job (`completed`) or a failed attempt (`failed`). */
  on(event: 'completed' | 'failed', listener: (job: Job, detail: unknown) => void): void;
  /** Waits for running jobs to finish, then disconnects. */
  close(): Promise<void>;
};

function processorFile(): string {
  // built: dist/rollout-processor.js next to dist/cli.js; from sources (tests, tsx): the .ts file
  const here = fileURLToPath(import.meta.url);
  const built = resolve(here, '..', 'rollout-processor.js');
  if (existsSync(built)) return built;
  return resolve(here, '..', 'rollout-processor.ts');
}

function folder(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError({
      parameter,
      functionName: FUNCTION,
      value,
      expected: 'a folder path',
    });
  }
  return resolve(value);
}

/**
 * Starts a BullMQ worker that samples rollout jobs with `@rlvr/rollout`'s ONNX sampler in sandboxed
 * child processes (one per concurrent job), loading the policy version each job names from the
 * shared weight folder.
 * @throws {QueueUnavailableError} when Redis is unreachable or may evict jobs.
 */
export async function startRolloutWorker(options: RolloutWorkerOptions): Promise<RolloutWorker> {
  const raw = validateOptions<RolloutWorkerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: KNOWN,
  });
  const url = validateRedisUrl(raw.redis, 'options.redis', FUNCTION);
  const checkpoint = folder(raw.checkpoint, 'options.checkpoint');
  const weights = folder(raw.weights, 'options.weights');
  const queue = validateQueueName(raw.queue ?? DEFAULT_ROLLOUT_QUEUE, 'options.queue', FUNCTION);
  const int = (value: unknown, parameter: string, fallback: number, min: number) =>
    validateInteger(value ?? fallback, { parameter, functionName: FUNCTION, min });
  const concurrency = int(raw.concurrency, 'options.concurrency', 1, 1);
  const threads = int(raw.threads, 'options.threads', 1, 1);
  const lockDuration = int(raw.lockDurationMs, 'options.lockDurationMs', 60_000, 1_000);
  const stalledInterval = int(raw.stalledIntervalMs, 'options.stalledIntervalMs', 30_000, 500);
  const connection = await connectRedis(url, 'worker');
  const worker = new Worker(queue, processorFile(), {
    connection,
    concurrency,
    lockDuration,
    stalledInterval,
    maxStalledCount: 1,
    removeOnComplete: { age: 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
    workerForkOptions: {
      env: {
        ...process.env,
        [WORKER_ENV.checkpoint]: checkpoint,
        [WORKER_ENV.weights]: weights,
        [WORKER_ENV.threads]: String(threads),
      },
    },
  });
  worker.on('error', (error) => {
    process.stderr.write(`rlvr-worker: ${error.message}\n`);
  });
  await worker.waitUntilReady();
  return {
    queue,
    on(event, listener) {
      worker.on(event, (job: Job | undefined, detail: unknown) => {
        if (job) listener(job, detail);
      });
    },
    async close() {
      await worker.close();
      connection.disconnect();
    },
  };
}
