import { AbortedError, RlvrError } from '@rlvr/core';
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
async function retryEarlierFailures(queue: Queue, ids: readonly string[]): Promise<void> {
  // looked up by id BEFORE this call adds anything: a job that fails during this call (all its
  // attempts used while we were still checking) must not be re-run as if it were an old failure
  await Promise.all(
    ids.map(async (id) => {
      const job = await queue.getJob(id);
      if (job !== undefined && (await job.getState()) === 'failed') await job.retry('failed');
    }),
  );
}

function parseReturn<Result>(value: unknown): Result {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Result;
}

/** Default of `reconnectTimeoutMs`: how long a call waits for a lost Redis to come back. */
export const DEFAULT_RECONNECT_TIMEOUT_MS = 30_000;

/** Settings of a {@link JobClient}. @internal */
export type JobClientOptions = {
  attempts: number;
  backoffMs: number;
  /** How long a call waits for a lost Redis to come back before it rejects (0: at once). */
  reconnectTimeoutMs: number;
  /** Runs after each reconnection (e.g. re-writing keys a restarted Redis lost); errors are ignored. */
  onReconnect?: () => Promise<unknown>;
};

/** Thrown inside {@link JobClient.run} when the connection drops: the attempt is redone. */
const LOST = Symbol('rlvr.connection-lost');

/**
 * The producer side shared by the queue sampler and the queue reward: adds jobs with idempotent
 * ids, waits for their results (completion events), and turns every way a call can end early
 * into a typed error: abort → `AbortedError` (queued jobs removed), a job out of attempts →
 * {@link QueueJobFailedError}.
 *
 * Redis lost mid-call (a restart, a network cut): the call waits up to `reconnectTimeoutMs` for
 * the connection to come back, then adds the jobs it has no result for again under the same
 * ids. A Redis that kept them (persistence) dedupes the ids and the call receives their results;
 * a Redis that lost them queues them afresh, and since every job's seed is in its data, a rerun
 * gives the same completions. Redis not back in time: {@link QueueUnavailableError}.
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
  readonly #reconnectTimeoutMs: number;
  readonly #onReconnect: (() => Promise<unknown>) | undefined;
  readonly #pending = new Set<(error: unknown) => void>();
  readonly #waitingForUp = new Set<() => void>();
  #closed = false;
  /** Connection state: `epoch` counts losses; `lost` rejects with {@link LOST} at the next one. */
  #epoch = 0;
  #downSince: number | undefined;
  #lost = JobClient.#lostPromise();

  private constructor(
    url: string,
    name: string,
    producer: Redis,
    events: Redis,
    options: JobClientOptions,
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
      attempts: options.attempts,
      backoff: { type: 'exponential', delay: options.backoffMs },
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
    };
    this.#reconnectTimeoutMs = options.reconnectTimeoutMs;
    this.#onReconnect = options.onReconnect;
    for (const connection of [producer, events]) {
      connection.on('close', () => this.#connectionLost());
      connection.on('ready', () => this.#connectionUp());
    }
  }

  static #lostPromise(): { promise: Promise<never>; reject: (reason: unknown) => void } {
    let reject!: (reason: unknown) => void;
    const promise = new Promise<never>((_, fail) => {
      reject = fail;
    });
    promise.catch(() => undefined);
    return { promise, reject };
  }

  /** Connects (checking Redis: {@link QueueUnavailableError}) and starts listening for results. */
  static async open<Data, Result>(
    url: string,
    name: string,
    options: JobClientOptions,
  ): Promise<JobClient<Data, Result>> {
    const producer = await connectRedis(url, 'producer');
    let events: Redis;
    try {
      events = await connectRedis(url, 'worker');
    } catch (error) {
      producer.disconnect();
      throw error;
    }
    const client = new JobClient<Data, Result>(url, name, producer, events, options);
    await client.#queueEvents.waitUntilReady();
    return client;
  }

  #connectionLost(): void {
    if (this.#closed || this.#downSince !== undefined) return;
    this.#downSince = Date.now();
    this.#epoch += 1;
    this.#lost.reject(LOST);
  }

  #connectionUp(): void {
    if (this.#downSince === undefined || this.#closed) return;
    if (this.producer.status !== 'ready' || this.#events.status !== 'ready') return;
    this.#downSince = undefined;
    this.#lost = JobClient.#lostPromise();
    for (const resolve of this.#waitingForUp) resolve();
    this.#waitingForUp.clear();
    this.#onReconnect?.().catch(() => undefined);
  }

  /** Resolves once connected; rejects when Redis stays away past `reconnectTimeoutMs`. */
  async #untilUp(stopped: Promise<never>): Promise<void> {
    if (this.#downSince === undefined) return;
    const left = this.#reconnectTimeoutMs - (Date.now() - this.#downSince);
    let timer: NodeJS.Timeout | undefined;
    let onUp: (() => void) | undefined;
    const up = new Promise<void>((resolve) => {
      onUp = resolve;
      this.#waitingForUp.add(resolve);
    });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            this.#unavailable(
              'unreachable',
              `the connection was lost while jobs were pending and Redis did not come back within ${this.#reconnectTimeoutMs} ms (reconnectTimeoutMs)`,
            ),
          ),
        Math.max(0, left),
      );
    });
    try {
      await Promise.race([up, timeout, stopped]);
    } finally {
      clearTimeout(timer);
      this.#waitingForUp.delete(onUp!);
    }
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

  /** False while the connection to Redis is lost (a restart, a network cut). */
  get connected(): boolean {
    return this.#downSince === undefined;
  }

  /** Throws when closed. */
  assertOpen(operation: string): void {
    if (this.#closed) throw this.#unavailable('closed', `${operation} was called after close()`);
  }

  async #wait(
    job: Job<Data>,
    epoch: number,
    signal: AbortSignal | undefined,
    onFailed: ((error: QueueJobFailedError, data: Data) => Result) | undefined,
  ): Promise<Result> {
    try {
      return parseReturn<Result>(await job.waitUntilFinished(this.#queueEvents));
    } catch (error) {
      if (signal?.aborted) throw error;
      // a command that failed because the connection dropped is no verdict on the job
      if (epoch !== this.#epoch || this.#downSince !== undefined) throw LOST;
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

  /** Adds `specs` (ids that exist already are not added again) and returns their jobs. */
  #add(specs: readonly JobSpec<Data>[]): Promise<Job<Data>[]> {
    return this.#queue.addBulk(
      specs.map((spec) => ({
        name: 'job',
        data: spec.data,
        opts: { ...this.#options, jobId: spec.id },
      })) as never,
    ) as Promise<Job<Data>[]>;
  }

  /**
   * Adds `specs` (a job whose id exists already is not added again: its result is awaited) and
   * resolves with their results in order. A job that failed every attempt rejects the call with
   * {@link QueueJobFailedError}, or, with `onFailed`, stands for `onFailed(error)`'s result. A lost
   * connection is waited out (see the class): the jobs without a result are added again.
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
    const results = new Array<Result>(specs.length);
    const done = new Array<boolean>(specs.length).fill(false);
    let jobs: Job<Data>[] = [];
    try {
      for (;;) {
        await this.#untilUp(stopped);
        const epoch = this.#epoch;
        const lost = this.#lost.promise;
        const todo = specs.flatMap((_, index) => (done[index] ? [] : [index]));
        try {
          const batch = todo.map((index) => specs[index]!);
          await Promise.race([
            retryEarlierFailures(
              this.#queue as unknown as Queue,
              batch.map((spec) => spec.id),
            ),
            lost,
            stopped,
          ]);
          jobs = await Promise.race([this.#add(batch), lost, stopped]);
          if (signal?.aborted) onAbort();
          const waits = jobs.map(async (job, k) => {
            results[todo[k]!] = await this.#wait(job, epoch, signal, onFailed);
            done[todo[k]!] = true;
          });
          await Promise.race([Promise.all(waits), lost, stopped]);
          return results;
        } catch (error) {
          // the connection dropped during this attempt: wait for it, then redo what is missing
          const dropped = error === LOST || epoch !== this.#epoch || this.#downSince !== undefined;
          if (!dropped || RlvrError.isInstance(error)) throw error;
        }
      }
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
