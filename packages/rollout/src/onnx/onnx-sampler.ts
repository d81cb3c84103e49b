import {
  AbortedError,
  type Completion,
  ErrorCode,
  InvalidArgumentError,
  type NamedTensor,
  RlvrError,
  type SampleRequest,
  type Sampler,
  ShapeMismatchError,
  throwIfAborted,
  validateOptions,
  type WeightSnapshot,
} from '@rlvr/core';
import { type Checkpoint, exportOnnx } from '@rlvr/model';
import type {
  GenerationSettings,
  IndexedCompletion,
  SequenceJob,
  TokenEvent,
} from '../engine/generate-batch.js';
import { buildLoopGraph } from '../loop/loop-graph.js';
import {
  createRolloutTokenizer,
  type RolloutTokenizer,
  type TokenizerFiles,
} from '../tokenizer/rollout-tokenizer.js';
import { createDecoderEngine, type EngineKind } from './decoder-engine.js';
import type { SessionSettings } from './ort.js';
import { prepareRequest } from './sample-request.js';
import { type OnnxSamplerOptions, resolveSamplerOptions } from './sampler-options.js';
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
  /** Merging the snapshot and encoding the ONNX graph. */
  exportMs: number;
  /** Creating the new session(s) (slowest worker). */
  sessionMs: number;
  totalMs: number;
};

/** The ONNX Runtime sampler: core's {@link Sampler} plus streaming and weight-sync timing. */
export interface OnnxSampler extends Sampler {
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
  /** Loads new weights (by Hugging Face name; missing names keep their values) and rebuilds the sessions. */
  updateWeights(snapshot: WeightSnapshot): Promise<void>;
  /** Timing of the last weight update, if any. */
  readonly lastWeightSync: WeightSyncTiming | undefined;
  /** Stops the workers and releases the sessions. */
  close(): Promise<void>;
}

type Engine = {
  generate(
    jobs: SequenceJob[],
    settings: GenerationSettings,
    signal: AbortSignal | undefined,
    onToken?: (event: TokenEvent) => void,
  ): Promise<IndexedCompletion[]>;
  update(model: ModelSource): Promise<number>;
  close(): Promise<void>;
  vocabSize: number;
};

const yieldToEventLoop = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

/** Bytes for worker threads go through one SharedArrayBuffer (no per-worker structured clone). */
function toShared(bytes: Uint8Array, workers: number): ModelSource {
  if (workers === 0) return { bytes };
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return { bytes: shared };
}

async function createEngine(
  kind: EngineKind,
  model: ModelSource,
  session: SessionSettings,
  workers: number,
  tokenizerFiles: TokenizerFiles | undefined,
  tokenizer: RolloutTokenizer | undefined,
): Promise<Engine> {
  if (workers === 0) {
    const decoder = await createDecoderEngine(
      kind,
      'bytes' in model ? model.bytes : model.path,
      session,
    );
    let queue: Promise<unknown> = Promise.resolve();
    const serial = <T>(task: () => Promise<T>): Promise<T> => {
      const result = queue.then(task);
      queue = result.catch(() => undefined);
      return result;
    };
    return {
      vocabSize: decoder.vocabSize,
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
      update: (next) =>
        serial(async () => {
          const started = performance.now();
          await decoder.replaceSession('bytes' in next ? next.bytes : next.path, session);
          return performance.now() - started;
        }),
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
    generate: (jobs, settings, signal, onToken) => {
      const flagBuffer = new SharedArrayBuffer(4);
      const flag = new Int32Array(flagBuffer);
      const onAbort = () => Atomics.store(flag, 0, 1);
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      return pool
        .generate(jobs, settings, flagBuffer, onToken)
        .finally(() => signal?.removeEventListener('abort', onAbort));
    },
    update: (next) => pool.update(next, session),
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
  const encode = (source: Checkpoint): Uint8Array =>
    kind.type === 'loop' ? buildLoopGraph(source, FUNCTION) : exportOnnx(source);
  let checkpoint = resolved.checkpoint;
  const tokenizer = tokenizerFiles ? await createRolloutTokenizer(tokenizerFiles) : undefined;
  const fromConfig = eosFromGenerationConfig(checkpoint?.generationConfig);
  const eosTokenIds =
    resolved.eosTokenIds ?? (fromConfig.length > 0 ? fromConfig : (tokenizer?.eosTokenIds ?? []));
  const model: ModelSource = checkpoint
    ? toShared(encode(checkpoint), workers)
    : { path: resolved.onnxPath! };
  const engine = await createEngine(kind, model, session, workers, tokenizerFiles, tokenizer);
  let closed = false;
  let lastWeightSync: WeightSyncTiming | undefined;

  /** Checks the call: options `{ signal }`, not closed, not aborted yet; then the request. */
  const prepare = (request: SampleRequest, callOptions: unknown, method: string) => {
    const functionName = `OnnxSampler.${method}`;
    const { signal } = validateOptions<{ signal?: AbortSignal }>(callOptions, {
      parameter: 'options',
      functionName,
      known: ['signal'],
    });
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new InvalidArgumentError({
        parameter: 'options.signal',
        functionName,
        value: signal,
        expected: 'an AbortSignal',
      });
    }
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
      const raw = validateOptions<WeightSnapshot>(snapshot, {
        parameter: 'snapshot',
        functionName: name,
        known: ['step', 'tensors'],
      });
      if (!Array.isArray(raw.tensors)) {
        throw new InvalidArgumentError({
          parameter: 'snapshot.tensors',
          functionName: name,
          value: raw.tensors,
          expected: 'an array of named tensors',
        });
      }
      const started = performance.now();
      const current = new Map(checkpoint.tensors.map((tensor) => [tensor.name, tensor]));
      raw.tensors.forEach((tensor: NamedTensor, index: number) => {
        const existing = current.get(tensor?.name);
        if (!existing) {
          throw new InvalidArgumentError({
            parameter: `snapshot.tensors[${index}].name`,
            functionName: name,
            value: tensor?.name,
            expected: 'the Hugging Face name of a tensor of the model',
          });
        }
        if (
          !(tensor.data instanceof Float32Array) ||
          tensor.data.length !== existing.data.length ||
          tensor.shape.join(',') !== existing.shape.join(',')
        ) {
          throw new ShapeMismatchError({
            parameter: `snapshot.tensors[${index}]`,
            functionName: name,
            expected: `a Float32Array tensor of shape [${existing.shape.join(', ')}]`,
            actual: `shape [${tensor.shape?.join(', ')}] with ${tensor.data?.length} values`,
          });
        }
        current.set(tensor.name, tensor);
      });
      const next: Checkpoint = {
        ...checkpoint,
        tensors: checkpoint.tensors.map((tensor) => current.get(tensor.name)!),
      };
      const bytes = toShared(encode(next), workers);
      const exported = performance.now();
      const sessionMs = await engine.update(bytes);
      checkpoint = next;
      lastWeightSync = {
        exportMs: exported - started,
        sessionMs,
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
