import { ErrorCode, RlvrError, validateInteger, validateOptions } from '@rlvr/core';
import { runTests } from './run-tests.js';
import type { RunTestsOptions, RunTestsResult } from './types.js';

/** Options of {@link createSandboxPool}. */
export type SandboxPoolOptions = {
  /** Sandboxes running at once. Default: 2. */
  concurrency?: number;
  /** Runs allowed to wait for a slot; beyond that `run()` rejects (`UNAVAILABLE`). Default 1000. */
  maxQueue?: number;
};

/** A bounded pool of sandbox runs. */
export type SandboxPool = {
  /** Queues a run; resolves with its result (`timings.queueMs` = time spent waiting). */
  run(options: RunTestsOptions): Promise<RunTestsResult>;
  /** Resolves when the queue has room: producers `await pool.ready()` before each `run()`. */
  ready(): Promise<void>;
  /** Resolves when nothing is running or queued. */
  onIdle(): Promise<void>;
  /** Runs in progress. */
  readonly running: number;
  /** Runs waiting for a slot. */
  readonly queued: number;
};

/**
 * Runs up to `concurrency` sandboxes in parallel; further runs wait in a bounded FIFO queue.
 * Back-pressure: `ready()` resolves only when the queue has room, and `run()` on a full queue
 * rejects with `UNAVAILABLE` instead of buffering without bound.
 *
 * @example
 * ```ts
 * const pool = createSandboxPool({ concurrency: 4, maxQueue: 16 });
 * for (const task of tasks) {
 *   await pool.ready();
 *   void pool.run({ language: 'python', program: task.program, tests: task.tests }).then(record);
 * }
 * await pool.onIdle();
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` on a bad option.
 */
export function createSandboxPool(options?: SandboxPoolOptions): SandboxPool {
  const input = validateOptions<SandboxPoolOptions>(options, {
    parameter: 'options',
    functionName: 'createSandboxPool',
    known: ['concurrency', 'maxQueue'],
  });
  const concurrency =
    input.concurrency === undefined
      ? 2
      : validateInteger(input.concurrency, {
          parameter: 'options.concurrency',
          functionName: 'createSandboxPool',
          min: 1,
          max: 1024,
        });
  const maxQueue =
    input.maxQueue === undefined
      ? 1000
      : validateInteger(input.maxQueue, {
          parameter: 'options.maxQueue',
          functionName: 'createSandboxPool',
          min: 0,
          max: 1_000_000,
        });
  let running = 0;
  const queue: (() => void)[] = [];
  let roomWaiters: (() => void)[] = [];
  let idleWaiters: (() => void)[] = [];

  const notify = () => {
    if ((running < concurrency || queue.length < maxQueue) && roomWaiters.length > 0) {
      const waiters = roomWaiters;
      roomWaiters = [];
      for (const wake of waiters) wake();
    }
    if (running === 0 && queue.length === 0 && idleWaiters.length > 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  };
  const release = () => {
    running--;
    const next = queue.shift();
    if (next) {
      running++;
      next();
    }
    notify();
  };
  return {
    run(runOptions) {
      if (running >= concurrency && queue.length >= maxQueue) {
        return Promise.reject(
          new RlvrError(
            ErrorCode.UNAVAILABLE,
            `createSandboxPool(): queue is full (${maxQueue} waiting); await pool.ready() before run()`,
          ),
        );
      }
      const enqueued = performance.now();
      return new Promise<RunTestsResult>((resolve, reject) => {
        const start = () => {
          const queueMs = performance.now() - enqueued;
          runTests(runOptions)
            .then(
              (result) => resolve({ ...result, timings: { ...result.timings, queueMs } }),
              reject,
            )
            .finally(release);
        };
        if (running < concurrency) {
          running++;
          start();
        } else {
          queue.push(start);
        }
      });
    },
    ready() {
      if (running < concurrency || queue.length < maxQueue) return Promise.resolve();
      return new Promise((resolve) => roomWaiters.push(resolve));
    },
    onIdle() {
      if (running === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    get running() {
      return running;
    },
    get queued() {
      return queue.length;
    },
  };
}
