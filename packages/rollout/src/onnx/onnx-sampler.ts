import {
  AbortedError,
  type Completion,
  ErrorCode,
  type MultiTurnSampler,
  RlvrError,
  type SampleRequest,
  type Trajectory,
  type TrajectoryRequest,
  throwIfAborted,
  type WeightSnapshot,
} from '@rlvr/core';
import { type Checkpoint, exportOnnx } from '@rlvr/model';
import type {
  GenerationSettings,
  IndexedCompletion,
  SequenceJob,
  TokenEvent,
} from '../engine/generate-batch.js';
import { buildLoopGraph, buildLoopGraphWithWeightInputs } from '../loop/loop-graph.js';
import { type RunTurns, sampleTrajectories } from '../multi-turn/sample-trajectories.js';
import {
  createRolloutTokenizer,
  type RolloutTokenizer,
  type TokenizerFiles,
} from '../tokenizer/rollout-tokenizer.js';
import { createDecoderEngine, type EngineKind } from './decoder-engine.js';
import type { SessionSettings } from './ort.js';
import { prepareRequest } from './sample-request.js';
import {
  type OnnxSamplerOptions,
  readCallOptions,
  resolveSamplerOptions,
} from './sampler-options.js';
import { mergeSnapshot, WeightStore } from './weight-store.js';
import { WorkerPool } from './worker-pool.js';
import type { ModelSource } from './worker-protocol.js';

export type { OnnxSamplerOptions };

const FUNCTION = 'createOnnxSampler';

/** A streamed event: one sampled token, or a finished completion. */
export type SampleStreamEvent =
  | ({ type: 'token' } & TokenEvent)
  | { type: 'completion'; promptIndex: number; sampleIndex: number; completion: Completion };

/** Timing of the last {@link OnnxSampler.updateWeights} call, in milliseconds. */
export type WeightSyncTiming = {
  /**
   * `in-place`: the weights are graph inputs and the update is a copy into the arrays the
   * sessions read (the `loop` engine with `weightSync` `'inputs'`, or `'auto'` after its first
   * update); `rebuild`: a new graph and new sessions (`weightSync: 'rebuild'`, the `optimum`
   * engine); `to-inputs`: the first update under `weightSync: 'auto'`, which opens the graph that
   * takes its weights as inputs (new sessions of a small graph, plus the weight copies).
   */
  mode: 'in-place' | 'rebuild' | 'to-inputs';
  /** Waiting for `sample()`/`stream()` calls started before the update to finish. */
  waitMs: number;
  /**
   * `in-place`: checking the snapshot and copying it into the weight buffer (shared with the
   * workers); `rebuild` and `to-inputs`: merging the snapshot and encoding the ONNX graph (and,
   * for `to-inputs`, filling the weight buffer).
   */
  exportMs: number;
  /**
   * `in-place`: each worker's copy into its session's inputs (slowest worker); `rebuild` and
   * `to-inputs`: creating the new session(s) (slowest worker).
   */
  sessionMs: number;
  totalMs: number;
};

/** The ONNX Runtime sampler: core's {@link Sampler} plus streaming and weight-sync timing. */
export interface OnnxSampler extends MultiTurnSampler {
  readonly specificationVersion: 'v1';
  readonly modelId: string;
  readonly vocabSize: number;
  /** The engine in use: the one asked for, or the one chosen for the model size (`options.engine`). */
  readonly engine: 'loop' | 'optimum';
  /**
   * Samples `request.n` completions per prompt. Follows core's abort contract: when
   * `options.signal` is aborted (before the call or while it generates), the call rejects with
   * `AbortedError` and never resolves with partial completions.
   */
  sample(request: SampleRequest, options?: { signal?: AbortSignal }): Promise<Completion[][]>;
  /**
   * Streams tokens as they are sampled, then each completion. An aborted `options.signal` ends the
   * stream with `AbortedError` (tokens already streamed stay streamed; no completion events).
   */
  stream(
    request: SampleRequest,
    options?: { signal?: AbortSignal },
  ): AsyncIterable<SampleStreamEvent>;
  /**
   * Loads new weights (by Hugging Face name; missing names keep their values). How depends on
   * `options.weightSync` (see {@link OnnxSamplerOptions.weightSync} and {@link WeightSyncTiming}):
   * on the `loop` engine with graph inputs the update copies the weights into the arrays the
   * sessions read (no new graph or session); otherwise it rebuilds the graph and sessions.
   *
   * Ordering: `sample()`/`stream()` calls started before `updateWeights` run to the end on the
   * old weights (the update waits for them); calls started after it run on the new weights. The
   * snapshot's arrays are read when the update runs, so keep them unchanged until it resolves.
   */
  updateWeights(snapshot: WeightSnapshot): Promise<void>;
  /**
   * Multi-turn rollouts against environments (core's `TrajectoryRequest` rules): needs a tokenizer
   * with a chat template; turns pause at the template's tool-call end (`</tool_call>`), tool
   * results are rendered in the template's format and fed on the same KV cache.
   */
  sampleTrajectories(
    request: TrajectoryRequest,
    options?: { signal?: AbortSignal },
  ): Promise<Trajectory[][]>;
  /** Timing of the last weight update, if any. */
  readonly lastWeightSync: WeightSyncTiming | undefined;
  /** Stops the workers and releases the sessions. */
  close(): Promise<void>;
}

type Engine = {
  generateTurns: RunTurns;
  generate(
    jobs: SequenceJob[],
    settings: GenerationSettings,
    signal: AbortSignal | undefined,
    onToken?: (event: TokenEvent) => void,
  ): Promise<IndexedCompletion[]>;
  /** Replaces the sessions (call inside {@link serial}); resolves with ms spent. */
  update(model: ModelSource): Promise<number>;
  /** Copies `data` into the sessions' weight inputs (in-place graphs; inside {@link serial}). */
  writeWeights(data: Float32Array): Promise<number>;
  /** Runs `task` after every call queued before it (generation, updates) has finished. */
  serial<T>(task: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
  vocabSize: number;
};

const yieldToEventLoop = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

/** A graph to open, and for a loop graph with weight inputs the store its weights are kept in. */
type EncodedModel = ModelSource & { store?: WeightStore };

/** Bytes for worker threads go through one SharedArrayBuffer (no per-worker structured clone). */
function toShared(bytes: Uint8Array, workers: number): ModelSource {
  if (workers === 0) return { bytes };
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return { bytes: shared };
}

/** A FIFO queue: each task starts once every task queued before it has settled. */
function createSerialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let queue: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const result = queue.then(task);
    queue = result.catch(() => undefined);
    return result;
  };
}

async function createEngine(
  kind: EngineKind,
  model: ModelSource,
  session: SessionSettings,
  workers: number,
  tokenizerFiles: TokenizerFiles | undefined,
  tokenizer: RolloutTokenizer | undefined,
): Promise<Engine> {
  // One queue for generation and updates: an update waits for the calls queued before it, and
  // calls queued after it see the new weights.
  const serial = createSerialQueue();
  if (workers === 0) {
    const decoder = await createDecoderEngine(
      kind,
      'bytes' in model ? model.bytes : model.path,
      session,
      model.weights,
    );
    return {
      vocabSize: decoder.vocabSize,
      serial,
      generate: (jobs, settings, signal, onToken) =>
        serial(() =>
          decoder.generate(jobs, settings, {
            decode: tokenizer ? (ids) => tokenizer.decode(ids) : undefined,
            shouldAbort: () => signal?.aborted === true,
            // on the calling thread, session.run blocks the event loop: yield between steps so
            // that an abort (a timer, a request handler) can land mid-generation
            pause: signal ? yieldToEventLoop : undefined,
            onToken,
          }),
        ),
      generateTurns: (jobs, settings, signal, onPause) =>
        serial(() =>
          decoder.generateTurns(jobs, settings, {
            decode: tokenizer ? (ids) => tokenizer.decode(ids) : undefined,
            shouldAbort: () => signal?.aborted === true,
            pause: signal ? yieldToEventLoop : undefined,
            onPause,
          }),
        ),
      update: async (next) => {
        const started = performance.now();
        await decoder.replaceSession(
          'bytes' in next ? next.bytes : next.path,
          session,
          next.weights,
        );
        return performance.now() - started;
      },
      writeWeights: async (data) => {
        const started = performance.now();
        decoder.writeWeights(data);
        return performance.now() - started;
      },
      close: () => serial(() => decoder.release()),
    };
  }
  const pool = new WorkerPool(workers, {
    engine: kind,
    model,
    session,
    tokenizer: tokenizerFiles,
  });
  let vocabSize: number;
  try {
    vocabSize = await pool.ready;
  } catch (error) {
    await pool.close();
    throw error;
  }
  return {
    vocabSize,
    serial,
    generate: (jobs, settings, signal, onToken) =>
      serial(() => {
        const flagBuffer = new SharedArrayBuffer(4);
        const flag = new Int32Array(flagBuffer);
        const onAbort = () => Atomics.store(flag, 0, 1);
        if (signal?.aborted) onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        return pool
          .generate(jobs, settings, flagBuffer, onToken)
          .finally(() => signal?.removeEventListener('abort', onAbort));
      }),
    generateTurns: (jobs, settings, signal, onPause) =>
      serial(() => {
        const flagBuffer = new SharedArrayBuffer(4);
        const flag = new Int32Array(flagBuffer);
        const onAbort = () => Atomics.store(flag, 0, 1);
        if (signal?.aborted) onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        return pool
          .generateTurns(jobs, settings, flagBuffer, onPause)
          .finally(() => signal?.removeEventListener('abort', onAbort));
      }),
    update: (next) => pool.update(next, session),
    writeWeights: (data) => pool.writeWeights(data),
    close: () => pool.close(),
  };
}

function eosFromGenerationConfig(config: object | undefined): number[] {
  const value = (config as { eos_token_id?: unknown } | undefined)?.eos_token_id;
  const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return list.filter((item): item is number => Number.isInteger(item));
}

/**
 * Creates the ONNX Runtime {@link Sampler}: G completions per prompt with temperature, top-k, exact
 * top-p, min-p, repetition penalty, stop strings, EOS and `maxNewTokens`, seeded (each sequence
 * draws from its own stream derived from `seed`, prompt index and sample index), with per-token
 * behaviour logprobs. Generation runs in worker threads (one ONNX session each), so the caller's
 * event loop stays free.
 *
 * @example
 * ```ts
 * const sampler = await createOnnxSampler({ checkpoint, workers: 2, threads: 1 });
 * const [group] = await sampler.sample({ prompts: ['2+2='], n: 8, maxNewTokens: 32, temperature: 0.8, topP: 0.9, seed: 1 });
 * group[0].logprobs; // behaviour logprobs, one per token
 * await sampler.updateWeights({ step: 1, tensors }); // from the trainer
 * await sampler.close();
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for bad options; {@link RlvrError}
 * `UNAVAILABLE` when onnxruntime-node or a requested execution provider is missing;
 * `MODEL_LOAD_FAILED` when the graph or tokenizer cannot be loaded.
 */
export async function createOnnxSampler(options: OnnxSamplerOptions): Promise<OnnxSampler> {
  const resolved = resolveSamplerOptions(options);
  const { kind, session, workers, tokenizerFiles } = resolved;
  let checkpoint = resolved.checkpoint;
  // loop engine: the weights are graph inputs (updates copy them in place) under
  // weightSync 'inputs', and under 'auto' from the first update on; else built into the graph
  let store: WeightStore | undefined;
  const encode = (source: Checkpoint, inputs: boolean): EncodedModel => {
    if (kind.type !== 'loop') return toShared(exportOnnx(source), workers);
    if (!inputs) return toShared(buildLoopGraph(source, FUNCTION), workers);
    const { bytes, weights } = buildLoopGraphWithWeightInputs(source, FUNCTION);
    const bound = new WeightStore(source, weights, workers > 0);
    return { ...toShared(bytes, workers), weights: bound.bound, store: bound };
  };
  const tokenizer = tokenizerFiles ? await createRolloutTokenizer(tokenizerFiles) : undefined;
  // Hugging Face's order: generation_config.json, else config.json (Llama 3 lists several), else
  // the tokenizer's eos_token.
  const fromGeneration = eosFromGenerationConfig(checkpoint?.generationConfig);
  const fromConfig =
    fromGeneration.length > 0 ? fromGeneration : eosFromGenerationConfig(checkpoint?.config);
  const eosTokenIds =
    resolved.eosTokenIds ?? (fromConfig.length > 0 ? fromConfig : (tokenizer?.eosTokenIds ?? []));
  let model: ModelSource = { path: resolved.onnxPath! };
  if (checkpoint) {
    const { store: initial, ...source } = encode(checkpoint, resolved.weightSync === 'inputs');
    model = source;
    store = initial;
  }
  const engine = await createEngine(kind, model, session, workers, tokenizerFiles, tokenizer);
  let closed = false;
  let lastWeightSync: WeightSyncTiming | undefined;

  /** Checks the call: options `{ signal }`, not closed, not aborted yet; then the request. */
  const prepare = (request: SampleRequest, callOptions: unknown, method: string) => {
    const functionName = `OnnxSampler.${method}`;
    const { signal } = readCallOptions(callOptions, functionName);
    if (closed) {
      throw new RlvrError(ErrorCode.UNAVAILABLE, `${functionName}() was called after close()`);
    }
    throwIfAborted(signal, `${functionName}()`);
    const prepared = prepareRequest(request, {
      functionName,
      tokenizer,
      promptFormat: resolved.promptFormat,
      vocabSize: engine.vocabSize,
      eosTokenIds,
    });
    return { ...prepared, signal };
  };

  const group = (
    completions: IndexedCompletion[],
    promptCount: number,
    n: number,
  ): Completion[][] => {
    const result = Array.from({ length: promptCount }, () => new Array<Completion>(n));
    for (const item of completions) result[item.promptIndex]![item.sampleIndex] = item.completion;
    return result;
  };

  const sampler: OnnxSampler = {
    specificationVersion: 'v1',
    modelId: resolved.modelId,
    vocabSize: engine.vocabSize,
    engine: kind.type,
    get lastWeightSync() {
      return lastWeightSync;
    },
    async sampleTrajectories(request, callOptions) {
      const functionName = 'OnnxSampler.sampleTrajectories';
      const { signal } = readCallOptions(callOptions, functionName);
      if (closed) {
        throw new RlvrError(ErrorCode.UNAVAILABLE, `${functionName}() was called after close()`);
      }
      return sampleTrajectories(
        { tokenizer, eosTokenIds, run: engine.generateTurns },
        request,
        signal,
      );
    },
    async sample(request, callOptions) {
      const { jobs, settings, promptCount, n, signal } = prepare(request, callOptions, 'sample');
      const completions = await engine.generate(jobs, settings, signal);
      // core's abort contract: an aborted call rejects, never resolves with partial completions
      throwIfAborted(signal, 'OnnxSampler.sample()');
      return group(completions, promptCount, n);
    },
    stream(request, callOptions) {
      const { jobs, settings, signal } = prepare(request, callOptions, 'stream');
      const events: SampleStreamEvent[] = [];
      let wake: (() => void) | undefined;
      let done = false;
      let failure: unknown;
      const push = (event: SampleStreamEvent) => {
        events.push(event);
        wake?.();
      };
      engine
        .generate(jobs, settings, signal, (event) => push({ type: 'token', ...event }))
        .then(
          (completions) => {
            if (signal?.aborted) {
              failure = new AbortedError({
                operation: 'OnnxSampler.stream()',
                cause: signal.reason,
              });
              return;
            }
            for (const item of completions) push({ type: 'completion', ...item });
          },
          (error: unknown) => {
            failure = error;
          },
        )
        .finally(() => {
          done = true;
          wake?.();
        });
      return {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            while (events.length > 0) yield events.shift()!;
            if (done) {
              if (failure !== undefined) throw failure;
              if (events.length === 0) return;
              continue;
            }
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            wake = undefined;
          }
        },
      };
    },
    async updateWeights(snapshot) {
      const name = 'OnnxSampler.updateWeights';
      if (!checkpoint) {
        throw new RlvrError(
          ErrorCode.UNAVAILABLE,
          `${name}() needs a sampler created from options.checkpoint (the ONNX graph is rebuilt from its config)`,
        );
      }
      const started = performance.now();
      const { next, changed } = mergeSnapshot(checkpoint, snapshot, name);
      // the next update merges onto this one, even while this one waits for running calls
      checkpoint = next;
      const timing = await engine.serial(async () => {
        const ready = performance.now();
        if (store) {
          store.write(changed);
          const copied = performance.now();
          const sessionMs = await engine.writeWeights(store.bound.data);
          return { mode: 'in-place' as const, ready, exportMs: copied - ready, sessionMs };
        }
        const toInputs = kind.type === 'loop' && resolved.weightSync === 'auto';
        const { store: nextStore, ...source } = encode(next, toInputs);
        const exported = performance.now();
        const sessionMs = await engine.update(source);
        // in place from now on (only once every session takes its weights as inputs)
        store = nextStore;
        const mode = toInputs ? ('to-inputs' as const) : ('rebuild' as const);
        return { mode, ready, exportMs: exported - ready, sessionMs };
      });
      lastWeightSync = {
        mode: timing.mode,
        waitMs: timing.ready - started,
        exportMs: timing.exportMs,
        sessionMs: timing.sessionMs,
        totalMs: performance.now() - started,
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await engine.close();
    },
  };
  return sampler;
}
