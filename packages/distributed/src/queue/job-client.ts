import { AbortedError } from '@rlvr/core';
import { type Job, type JobsOptions, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import { QueueUnavailableError } from '../errors/queue-unavailable-error.js';
import { connectRedis, KEEP_COMPLETED, KEEP_FAILED, redactUrl } from '../redis/connection.js';

/** One job to add: its idempotent id and data. */
export type JobSpec<Data> = { id: string; data: Data };

const NOT_STARTED = new Set(['waiting', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Removes the jobs that have not started; running ones finish and their results are ignored, and
 * failed ones stay in the failed set (with their reason) for inspection.
 */
async function removeWaiting(jobs: readonly Job[]): Promise<void> {
  await Promise.all(
    jobs.map(async (job) => {
      const state = await job.getState().catch(() => 'unknown');
      if (NOT_STARTED.has(state)) await job.remove().catch(() => undefined);
    }),
  );
}

/**
 * A job id that already sits in the failed set failed in an earlier call (a worker that was
 * misconfigured then, a crash): this call is a new request for it, so it gets a new set of
 * attempts instead of the old failure.
 */
async function retryEarlierFailures(jobs: readonly Job[]): Promise<void> {
  await Promise.all(
    jobs.map(async (job) => {
      if ((await job.getState()) === 'failed') await job.retry('failed');
    }),
  );
}

function parseReturn<Result>(value: unknown): Result {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Result;
}

/**
 * The producer side shared by the queue sampler and the queue reward: adds jobs with idempotent
 * ids, waits for their results (completion events), and turns every way a call can end early
 * into a typed error: abort → `AbortedError` (queued jobs removed), a job out of attempts →
 * {@link QueueJobFailedError}, Redis lost mid-call → {@link QueueUnavailableError} (a restarted
 * Redis may have lost the jobs; waiting would hang).
 * @internal
 */
export class JobClient<Data, Result> {
  readonly name: string;
  readonly producer: Redis;
  readonly #url: string;
  readonly #events: Redis;
  readonly #queue: Queue<Data, unknown>;
  readonly #queueEvents: QueueEvents;
  readonly #options: JobsOptions;
  readonly #pending = new Set<(error: unknown) => void>();
  #closed = false;

  private constructor(
    url: string,
    name: string,
    producer: Redis,
    events: Redis,
    jobOptions: { attempts: number; backoffMs: number },
  ) {
    this.name = name;
    this.#url = url;
    this.producer = producer;
    this.#events = events;
    this.#queue = new Queue<Data, unknown>(name, { connection: producer });
    this.#queueEvents = new QueueEvents(name, { connection: events });
    this.#queueEvents.setMaxListeners(0);
    this.#queue.setMaxListeners(0);
    this.#queue.on('error', () => undefined);
    this.#queueEvents.on('error', () => undefined);
    this.#options = {
      attempts: jobOptions.attempts,
      backoff: { type: 'exponential', delay: jobOptions.backoffMs },
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
    };
    const lost = () =>
      this.#failPending('the connection to Redis was lost while jobs were pending');
    events.on('close', lost);
    producer.on('close', lost);
  }

  /** Connects (checking Redis: {@link QueueUnavailableError}) and starts listening for results. */
  static async open<Data, Result>(
    url: string,
    name: string,
    jobOptions: { attempts: number; backoffMs: number },
  ): Promise<JobClient<Data, Result>> {
    const producer = await connectRedis(url, 'producer');
    let events: Redis;
    try {
      events = await connectRedis(url, 'worker');
    } catch (error) {
      producer.disconnect();
      throw error;
    }
    const client = new JobClient<Data, Result>(url, name, producer, events, jobOptions);
    await client.#queueEvents.waitUntilReady();
    return client;
  }

  #unavailable(reason: 'unreachable' | 'closed', detail: string): QueueUnavailableError {
    return new QueueUnavailableError({ reason, url: redactUrl(this.#url), detail });
  }

  #failPending(detail: string): void {
    if (this.#pending.size === 0) return;
    const error = this.#unavailable(this.#closed ? 'closed' : 'unreachable', detail);
    for (const reject of this.#pending) reject(error);
    this.#pending.clear();
  }

  /** Throws when closed. */
  assertOpen(operation: string): void {
    if (this.#closed) throw this.#unavailable('closed', `${operation} was called after close()`);
  }

  async #wait(
    job: Job<Data>,
    signal: AbortSignal | undefined,
    onFailed: ((error: QueueJobFailedError, data: Data) => Result) | undefined,
  ): Promise<Result> {
    try {
      return parseReturn<Result>(await job.waitUntilFinished(this.#queueEvents));
    } catch (error) {
      if (signal?.aborted) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      const failed = new QueueJobFailedError({
        queue: this.name,
        jobId: job.id!,
        failedReason: reason,
        cause: error,
      });
      if (onFailed) return onFailed(failed, job.data);
      throw failed;
    }
  }

  /**
   * Adds `specs` (a job whose id exists already is not added again: its result is awaited) and
   * resolves with their results in order. A job that failed every attempt rejects the call with
   * {@link QueueJobFailedError}, or, with `onFailed`, stands for `onFailed(error)`'s result.
   */
  async run(
    specs: readonly JobSpec<Data>[],
    signal: AbortSignal | undefined,
    operation: string,
    onFailed?: (error: QueueJobFailedError, data: Data) => Result,
  ): Promise<Result[]> {
    this.assertOpen(operation);
    let stop: ((error: unknown) => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
    });
    stopped.catch(() => undefined);
    const onAbort = () => stop!(new AbortedError({ operation, cause: signal?.reason }));
    this.#pending.add(stop!);
    signal?.addEventListener('abort', onAbort, { once: true });
    let jobs: Job<Data>[] = [];
    try {
      if (this.producer.status !== 'ready') {
        throw this.#unavailable('unreachable', `Redis is not connected (${this.producer.status})`);
      }
      const added = this.#queue.addBulk(
        specs.map((spec) => ({
          name: 'job',
          data: spec.data,
          opts: { ...this.#options, jobId: spec.id },
        })) as never,
      ) as Promise<Job<Data>[]>;
      jobs = await Promise.race([added, stopped]);
      await Promise.race([retryEarlierFailures(jobs), stopped]);
      if (signal?.aborted) onAbort();
      return await Promise.race([
        Promise.all(jobs.map((job) => this.#wait(job, signal, onFailed))),
        stopped,
      ]);
    } catch (error) {
      if (this.producer.status === 'ready') await removeWaiting(jobs);
      throw error;
    } finally {
      this.#pending.delete(stop!);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Stops listening and disconnects; pending calls reject with `QueueUnavailableError` (`closed`). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#failPending('the client was closed while jobs were pending');
    // BullMQ's close waits for Redis; with Redis gone it would wait for ever: bound it
    const bounded = (promise: Promise<unknown>) =>
      Promise.race([
        promise.catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 2_000).unref()),
      ]);
    this.producer.disconnect();
    this.#events.disconnect();
    await bounded(this.#queueEvents.close());
    await bounded(this.#queue.close());
  }
}
