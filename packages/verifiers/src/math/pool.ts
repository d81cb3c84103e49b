import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AbortedError, ErrorCode, RlvrError, validateInteger, validateOptions } from '@rlvr/core';
import { validateString } from './equivalent.js';
import {
  goldToString,
  type MathVerifyResult,
  resolveVerifyMathOptions,
  type VerifyMathOptions,
} from './verify-math.js';

/** Options of {@link createMathVerifierPool}. */
export type MathVerifierPoolOptions = {
  /** Worker threads (default: available cores − 1, at least 1, at most 8). */
  size?: number;
  /**
   * Hard limit per check in milliseconds (default 2000). A check that runs longer is stopped by
   * terminating its worker (a fresh one replaces it) and scores 0 with violation `timeout`.
   */
  timeoutMs?: number;
  /** Default options for every check (per-call options are merged over them). */
  verifyOptions?: VerifyMathOptions;
};

/** A pool of worker threads that run {@link verifyMath} with a hard time budget. */
export interface MathVerifierPool {
  /** Number of worker threads. */
  readonly size: number;
  /**
   * Verifies one response off the main thread. Resolves with the same result as `verifyMath`, or
   * with score 0 and violation `timeout` / `verifier-crashed`; rejects only for invalid arguments
   * or after {@link MathVerifierPool.close}.
   */
  verify(
    response: string,
    gold: string | number,
    options?: VerifyMathOptions,
  ): Promise<MathVerifyResult>;
  /** Terminates the workers; pending checks reject with `AbortedError`. */
  close(): Promise<void>;
}

type Task = {
  id: number;
  response: string;
  gold: string;
  options: VerifyMathOptions | undefined;
  resolve: (result: MathVerifyResult) => void;
  reject: (error: unknown) => void;
};

type Slot = { worker: Worker; ready: boolean; task: Task | null; timer: NodeJS.Timeout | null };

// The worker is an inline CommonJS script that loads this package's entry (the bundled
// dist/index.js or .cjs) — or, when running from TypeScript sources, verify-math.ts through tsx.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
if (workerData.tsxApi) require(workerData.tsxApi).register();
const load = workerData.cjsPath ? Promise.resolve().then(() => require(workerData.cjsPath)) : import(workerData.moduleUrl);
load.then((mod) => {
  const verifyMath = mod.verifyMath || (mod.default && mod.default.verifyMath);
  parentPort.on('message', (message) => {
    let result;
    try {
      result = { id: message.id, result: verifyMath(message.response, message.gold, message.options) };
    } catch (error) {
      result = { id: message.id, error: String(error && error.message || error) };
    }
    parentPort.postMessage(result);
  });
  parentPort.postMessage({ ready: true });
}, (error) => {
  parentPort.postMessage({ fatal: String(error && error.stack || error) });
});
`;

function workerTarget(): { workerData: Record<string, string>; execArgv: string[] } {
  // Sources are only run in this repository's tests, where tsx is installed.
  if (typeof __filename === 'string' && __filename.endsWith('.cjs')) {
    return { workerData: { cjsPath: __filename }, execArgv: [] };
  }
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // Running from sources (tests): load the TypeScript module through tsx.
    return {
      workerData: {
        cjsPath: fileURLToPath(new URL('./verify-math.ts', here)),
        tsxApi: createRequire(here).resolve('tsx/cjs/api'),
      },
      execArgv: [],
    };
  }
  return { workerData: { moduleUrl: here }, execArgv: [] };
}

function timeoutResult(timeoutMs: number, kind: 'timeout' | 'verifier-crashed'): MathVerifyResult {
  return {
    score: 0,
    correct: false,
    extracted: null,
    reason:
      kind === 'timeout'
        ? `verification did not finish within ${timeoutMs} ms`
        : 'the verifier worker crashed on this input',
    source: 'none',
    violations: [kind],
    timings: { extractMs: 0, compareMs: 0, totalMs: timeoutMs },
  };
}

/**
 * Creates a pool of worker threads running {@link verifyMath} with a hard per-check time budget,
 * for untrusted responses where a pathological answer must not stall training. Checks queue when
 * all workers are busy.
 *
 * @example
 * ```ts
 * const pool = createMathVerifierPool({ size: 2, timeoutMs: 1000 });
 * const result = await pool.verify('... \\boxed{42}', '42'); // result.score === 1
 * await pool.close();
 * ```
 * @throws {InvalidArgumentError} for an invalid size or timeout.
 */
export function createMathVerifierPool(options: MathVerifierPoolOptions = {}): MathVerifierPool {
  const functionName = 'createMathVerifierPool';
  validateOptions(options, {
    parameter: 'options',
    functionName,
    known: ['size', 'timeoutMs', 'verifyOptions'],
  });
  const size =
    options.size === undefined
      ? Math.max(1, Math.min(8, availableParallelism() - 1))
      : validateInteger(options.size, {
          parameter: 'options.size',
          functionName,
          min: 1,
          max: 256,
        });
  const timeoutMs =
    options.timeoutMs === undefined
      ? 2000
      : validateInteger(options.timeoutMs, {
          parameter: 'options.timeoutMs',
          functionName,
          min: 1,
          max: 3_600_000,
        });
  const baseOptions = options.verifyOptions;
  if (baseOptions !== undefined)
    resolveVerifyMathOptions(baseOptions, functionName, 'options.verifyOptions');

  const target = workerTarget();
  const queue: Task[] = [];
  const slots: Slot[] = [];
  let closed = false;
  let nextId = 0;

  const spawn = (): Slot => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: target.workerData,
      execArgv: target.execArgv,
    });
    worker.unref();
    const slot: Slot = { worker, ready: false, task: null, timer: null };
    worker.on(
      'message',
      (message: {
        ready?: boolean;
        fatal?: string;
        id?: number;
        result?: MathVerifyResult;
        error?: string;
      }) => {
        if (message.ready) {
          slot.ready = true;
          dispatch();
          return;
        }
        if (message.fatal !== undefined) {
          failAll(
            new RlvrError(
              ErrorCode.VERIFIER_FAILED,
              `math verifier worker failed to start: ${message.fatal}`,
            ),
          );
          return;
        }
        const task = slot.task;
        if (!task || task.id !== message.id) return;
        finishSlot(slot);
        if (message.error !== undefined) {
          task.reject(new RlvrError(ErrorCode.VERIFIER_FAILED, message.error));
        } else {
          task.resolve(message.result!);
        }
        dispatch();
      },
    );
    worker.on('error', () => {
      replace(slot, 'verifier-crashed');
    });
    worker.on('exit', () => {
      if (!closed && slots.includes(slot)) replace(slot, 'verifier-crashed');
    });
    return slot;
  };

  const finishSlot = (slot: Slot): void => {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    slot.task = null;
  };

  /** Workers keep the process alive only while checks are pending. */
  const updateRefs = (): void => {
    const busy = queue.length > 0 || slots.some((slot) => slot.task !== null);
    for (const slot of slots) {
      if (busy) slot.worker.ref();
      else slot.worker.unref();
    }
  };

  const replace = (slot: Slot, reason: 'timeout' | 'verifier-crashed'): void => {
    const task = slot.task;
    finishSlot(slot);
    const index = slots.indexOf(slot);
    if (index >= 0) slots.splice(index, 1);
    void slot.worker.terminate();
    if (task) task.resolve(timeoutResult(timeoutMs, reason));
    if (!closed) {
      slots.push(spawn());
      dispatch();
    }
  };

  const failAll = (error: unknown): void => {
    for (const slot of slots) {
      if (slot.task) slot.task.reject(error);
      finishSlot(slot);
      void slot.worker.terminate();
    }
    slots.length = 0;
    for (const task of queue.splice(0)) task.reject(error);
    closed = true;
  };

  const dispatch = (): void => {
    for (const slot of slots) {
      if (queue.length === 0) break;
      if (!slot.ready || slot.task) continue;
      const task = queue.shift()!;
      slot.task = task;
      slot.timer = setTimeout(() => replace(slot, 'timeout'), timeoutMs);
      slot.worker.postMessage({
        id: task.id,
        response: task.response,
        gold: task.gold,
        options: task.options,
      });
    }
    updateRefs();
  };

  for (let index = 0; index < size; index++) slots.push(spawn());

  return {
    size,
    verify(response, gold, callOptions) {
      try {
        validateString(response, 'response', 'MathVerifierPool.verify');
        const goldText = goldToString(gold, 'MathVerifierPool.verify');
        const merged =
          callOptions === undefined ? baseOptions : { ...(baseOptions ?? {}), ...callOptions };
        resolveVerifyMathOptions(merged, 'MathVerifierPool.verify');
        if (closed) {
          return Promise.reject(
            new AbortedError({ operation: 'MathVerifierPool.verify()', cause: 'pool closed' }),
          );
        }
        return new Promise<MathVerifyResult>((resolve, reject) => {
          queue.push({ id: nextId++, response, gold: goldText, options: merged, resolve, reject });
          dispatch();
        });
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async close() {
      if (closed && slots.length === 0) return;
      closed = true;
      const error = new AbortedError({
        operation: 'MathVerifierPool.verify()',
        cause: 'pool closed',
      });
      for (const task of queue.splice(0)) task.reject(error);
      const workers = slots.splice(0);
      for (const slot of workers) {
        if (slot.task) slot.task.reject(error);
        finishSlot(slot);
      }
      await Promise.all(workers.map((slot) => slot.worker.terminate()));
    },
  };
}
