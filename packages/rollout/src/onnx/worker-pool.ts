import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ErrorCode, RlvrError } from '@rlvr/core';
import type {
  GenerationSettings,
  IndexedCompletion,
  SequenceJob,
  TokenEvent,
} from '../engine/generate-batch.js';
import type { PausedRow, RowAction, TurnSettings } from '../engine/generate-turns.js';
import type { TokenizerFiles } from '../tokenizer/rollout-tokenizer.js';
import type { EngineKind } from './decoder-engine.js';
import type { SessionSettings } from './ort.js';
import type { ModelSource, WorkerError, WorkerRequest, WorkerResponse } from './worker-protocol.js';

/** Rebuilds a typed error from a worker message. @internal */
export function deserializeError(error: WorkerError, context: string): Error {
  const code = error.code && error.code in ErrorCode ? (error.code as ErrorCode) : undefined;
  const cause = Object.assign(new Error(error.message), { name: error.name, stack: error.stack });
  if (code) return new RlvrError(code, error.message, { cause });
  return new RlvrError(ErrorCode.MODEL_LOAD_FAILED, `${context}: ${error.message}`, { cause });
}

function startWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // running from source (tests): register tsx in the worker, then load the TypeScript entry
    const tsx = pathToFileURL(
      createRequire(here)
        .resolve('tsx/esm/api')
        .replace(/\.cjs$/, '.mjs'),
    ).href;
    const entry = new URL('./worker.ts', here).href;
    return new Worker(
      `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`,
      { eval: true },
    );
  }
  return new Worker(new URL(here.endsWith('.cjs') ? './worker.cjs' : './worker.js', here));
}

type Pending = {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  onToken?: (event: TokenEvent) => void;
  onPause?: (rows: PausedRow[]) => Promise<RowAction[]>;
};

/** One worker thread holding one ONNX session. @internal */
class SessionWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextJobId = 1;
  private failure: Error | undefined;
  readonly ready: Promise<number>;

  constructor(init: Extract<WorkerRequest, { type: 'init' }>) {
    this.worker = startWorker();
    this.ready = new Promise<number>((resolve, reject) => {
      const onMessage = (message: WorkerResponse) => {
        if (message.type === 'ready') resolve(message.vocabSize);
        else if (message.type === 'init-error')
          reject(deserializeError(message.error, 'worker start failed'));
        else this.onMessage(message);
      };
      this.worker.on('message', onMessage);
      this.worker.on('error', (error) => {
        this.failure = new RlvrError(
          ErrorCode.UNAVAILABLE,
          `rollout worker crashed: ${error.message}`,
          {
            cause: error,
          },
        );
        reject(this.failure);
        for (const pending of this.pending.values()) pending.reject(this.failure);
        this.pending.clear();
      });
    });
    this.ready.catch(() => undefined);
    this.worker.postMessage(init);
  }

  private onMessage(message: WorkerResponse): void {
    if (message.type === 'ready' || message.type === 'init-error') return;
    const pending = this.pending.get(message.jobId);
    if (!pending) return;
    if (message.type === 'token') {
      pending.onToken?.(message.event);
      return;
    }
    if (message.type === 'pause') {
      const { jobId } = message;
      const answer = pending.onPause
        ? pending.onPause(message.rows)
        : Promise.resolve(message.rows.map(() => ({ done: true as const })));
      void answer.then(
        (actions) =>
          this.worker.postMessage({ type: 'resume', jobId, actions } satisfies WorkerRequest),
        () =>
          this.worker.postMessage({
            type: 'resume',
            jobId,
            actions: message.rows.map(() => ({ done: true as const })),
          } satisfies WorkerRequest),
      );
      return;
    }
    this.pending.delete(message.jobId);
    if (message.type === 'done') pending.resolve(message.completions);
    else if (message.type === 'updated') pending.resolve(message.elapsedMs);
    else pending.reject(deserializeError(message.error, 'rollout worker failed'));
  }

  private request<T>(
    make: (jobId: number) => WorkerRequest,
    onToken?: (event: TokenEvent) => void,
    onPause?: Pending['onPause'],
  ): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const jobId = this.nextJobId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(jobId, {
        resolve: resolve as (value: unknown) => void,
        reject,
        onToken,
        onPause,
      });
      this.worker.postMessage(make(jobId));
    });
  }

  generate(
    jobs: SequenceJob[],
    settings: GenerationSettings,
    abortFlag: SharedArrayBuffer,
    onToken?: (event: TokenEvent) => void,
  ): Promise<IndexedCompletion[]> {
    return this.request(
      (jobId) => ({
        type: 'generate',
        jobId,
        jobs,
        settings,
        abortFlag,
        stream: onToken !== undefined,
      }),
      onToken,
    );
  }

  generateTurns(
    jobs: SequenceJob[],
    settings: TurnSettings,
    abortFlag: SharedArrayBuffer,
    onPause: (rows: PausedRow[]) => Promise<RowAction[]>,
  ): Promise<unknown> {
    return this.request(
      (jobId) => ({ type: 'turns', jobId, jobs, settings, abortFlag }),
      undefined,
      onPause,
    );
  }

  update(model: ModelSource, session: SessionSettings): Promise<number> {
    return this.request((jobId) => ({ type: 'update', jobId, model, session }));
  }

  writeWeights(data: Float32Array): Promise<number> {
    return this.request((jobId) => ({ type: 'weights', jobId, data }));
  }

  async close(): Promise<void> {
    this.worker.postMessage({ type: 'close' } satisfies WorkerRequest);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => void this.worker.terminate().then(() => resolve()), 2000);
      this.worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/**
 * A fixed set of worker threads, each with its own ONNX session; a request's sequences are split
 * into contiguous chunks (samples of one prompt stay together where possible, so they share one
 * prompt forward pass) and generated in parallel.
 * @internal
 */
export class WorkerPool {
  private readonly workers: SessionWorker[];
  readonly ready: Promise<number>;

  constructor(
    count: number,
    init: {
      engine: EngineKind;
      model: ModelSource;
      session: SessionSettings;
      tokenizer?: TokenizerFiles;
    },
  ) {
    this.workers = Array.from(
      { length: count },
      () => new SessionWorker({ type: 'init', ...init }),
    );
    this.ready = Promise.all(this.workers.map((worker) => worker.ready)).then((sizes) => sizes[0]!);
  }

  get size(): number {
    return this.workers.length;
  }

  async generate(
    jobs: SequenceJob[],
    settings: GenerationSettings,
    abortFlag: SharedArrayBuffer,
    onToken?: (event: TokenEvent) => void,
  ): Promise<IndexedCompletion[]> {
    const chunk = Math.ceil(jobs.length / this.workers.length);
    const parts = await Promise.all(
      this.workers.map((worker, index) => {
        const slice = jobs.slice(index * chunk, (index + 1) * chunk);
        return slice.length === 0 ? [] : worker.generate(slice, settings, abortFlag, onToken);
      }),
    );
    return parts.flat();
  }

  /** Replaces every worker's session; resolves with the slowest worker's time in ms. */
  /** Multi-turn generation: jobs split as in {@link generate}; rows report their global job index. */
  async generateTurns(
    jobs: SequenceJob[],
    settings: TurnSettings,
    abortFlag: SharedArrayBuffer,
    onPause: (rows: PausedRow[]) => Promise<RowAction[]>,
  ): Promise<void> {
    const chunk = Math.ceil(jobs.length / this.workers.length);
    await Promise.all(
      this.workers.map((worker, index) => {
        const offset = index * chunk;
        const slice = jobs.slice(offset, offset + chunk);
        if (slice.length === 0) return undefined;
        return worker.generateTurns(slice, settings, abortFlag, (rows) =>
          onPause(rows.map((row) => ({ ...row, job: row.job + offset }))),
        );
      }),
    );
  }

  async update(model: ModelSource, session: SessionSettings): Promise<number> {
    const times = await Promise.all(this.workers.map((worker) => worker.update(model, session)));
    return Math.max(...times);
  }

  /**
   * Copies new weights (a SharedArrayBuffer view, read by every worker) into each worker's weight
   * inputs; resolves with the slowest worker's time in ms.
   */
  async writeWeights(data: Float32Array): Promise<number> {
    const times = await Promise.all(this.workers.map((worker) => worker.writeWeights(data)));
    return Math.max(...times);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}
