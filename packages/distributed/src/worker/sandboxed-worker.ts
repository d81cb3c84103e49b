import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, validateInteger } from '@rlvr/core';
import { type Job, Worker } from 'bullmq';
import { connectRedis, KEEP_COMPLETED, KEEP_FAILED } from '../redis/connection.js';

/** Settings every worker kind shares (`--concurrency`, `--lock-duration`, `--stalled-interval`). */
export type WorkerTuning = {
  /** Jobs in flight, each in its own child process. Default 1. */
  concurrency?: number;
  /**
   * How long a job's lock lasts without renewal, in ms (default 60 s). The parent process renews
   * it every half period while a child computes (the child's CPU work cannot delay it); if the
   * worker dies (kill -9), its job goes back to the queue once the lock has expired and a stalled
   * check of another worker runs (`stalledIntervalMs`).
   */
  lockDurationMs?: number;
  /** How often this worker requeues stalled jobs of dead workers, in ms. Default 30 s. */
  stalledIntervalMs?: number;
};

export const TUNING_KEYS = ['concurrency', 'lockDurationMs', 'stalledIntervalMs'] as const;

/** A running worker. */
export type RunningWorker = {
  readonly queue: string;
  /** Events for logs: a finished job (`completed`) or a failed attempt (`failed`). */
  on(event: 'completed' | 'failed', listener: (job: Job, detail: unknown) => void): void;
  /** Waits for running jobs to finish, then disconnects. */
  close(): Promise<void>;
};

/** The processor file `name` next to this module: built `.js` in dist, `.ts` from the sources. */
export function processorFile(name: string): string {
  const here = fileURLToPath(import.meta.url);
  const built = resolve(here, '..', `${name}.js`);
  if (existsSync(built)) return built;
  return resolve(here, '..', `${name}.ts`);
}

/** Checks a path option and makes it absolute. */
export function pathOption(
  value: unknown,
  parameter: string,
  functionName: string,
  expected: string,
): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError({ parameter, functionName, value, expected });
  }
  return resolve(value);
}

/**
 * Starts a BullMQ worker whose jobs run in sandboxed child processes (BullMQ forks one per
 * concurrent job and reuses it), configured through `env`.
 */
export async function startSandboxedWorker(options: {
  url: string;
  queue: string;
  processor: string;
  env: Record<string, string>;
  tuning: WorkerTuning;
  functionName: string;
}): Promise<RunningWorker> {
  const { tuning, functionName } = options;
  const int = (value: unknown, parameter: string, fallback: number, min: number) =>
    validateInteger(value ?? fallback, { parameter, functionName, min });
  const concurrency = int(tuning.concurrency, 'options.concurrency', 1, 1);
  const lockDuration = int(tuning.lockDurationMs, 'options.lockDurationMs', 60_000, 1_000);
  const stalledInterval = int(tuning.stalledIntervalMs, 'options.stalledIntervalMs', 30_000, 500);
  const connection = await connectRedis(options.url, 'worker');
  const worker = new Worker(options.queue, options.processor, {
    connection,
    concurrency,
    lockDuration,
    stalledInterval,
    maxStalledCount: 1,
    removeOnComplete: KEEP_COMPLETED,
    removeOnFail: KEEP_FAILED,
    workerForkOptions: { env: { ...process.env, ...options.env } },
  });
  worker.on('error', (error) => {
    process.stderr.write(`rlvr-worker: ${error.message}\n`);
  });
  await worker.waitUntilReady();
  return {
    queue: options.queue,
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
