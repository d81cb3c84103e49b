import { availableParallelism } from 'node:os';
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
  validateInteger,
  validateOneOf,
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
import { resolveLogitsOptions } from '../generation/logits-processors.js';
import { buildLoopGraph } from '../loop/loop-graph.js';
import {
  createRolloutTokenizer,
  type RolloutTokenizer,
  type TokenizerFiles,
} from '../tokenizer/rollout-tokenizer.js';
import { createDecoderEngine, type EngineKind } from './decoder-engine.js';
import { type ExecutionProvider, type SessionSettings, validateExecutionProviders } from './ort.js';
import { WorkerPool } from './worker-pool.js';
import type { ModelSource } from './worker-protocol.js';

const FUNCTION = 'createOnnxSampler';

/** Options of {@link createOnnxSampler}. Give exactly one of `checkpoint`, `onnxPath`, `onnx`. */
export type OnnxSamplerOptions = {
  /** A model from `@rlvr/model` (exported to ONNX in memory; enables `updateWeights`). */
  checkpoint?: Checkpoint;
  /** Path to an Optimum-style decoder `.onnx` file (e.g. `<checkpoint>/onnx/model.onnx`). */
  onnxPath?: string;
  /** Tokenizer files; default `checkpoint.tokenizer`. Needed for text prompts, text and stop strings. */
  tokenizer?: TokenizerFiles;
  /** `raw`: text prompts are encoded as is (default); `chat`: wrapped as one user message with the chat template. */
  promptFormat?: 'raw' | 'chat';
  /** Execution providers in order of preference (default `['cpu']`). */
  executionProviders?: ExecutionProvider[];
  /** Intra-op threads per session (default: available cores / workers, at least 1). */
  threads?: number;
  /** Worker threads, each with its own session (default 1); 0 runs on the calling thread. */
  workers?: number;
  /** EOS token ids (default: `generation_config.json`'s `eos_token_id`, else the tokenizer's `eos_token`). */
  eosTokenIds?: number[];
  /** Name reported as `Sampler.modelId` (default `onnx:<onnxPath>` or `onnx:checkpoint`). */
  modelId?: string;
  /** Let ORT threads spin while idle (default false: kinder to a shared machine). */
  allowSpinning?: boolean;
  /**
   * `loop` (default with `checkpoint`): a graph built from the checkpoint samples `stepsPerRun`
   * tokens per `session.run` in-graph (same processors, seeds and logprobs as `optimum`, computed
   * in float32); `optimum` (default and only choice with `onnxPath`): the Optimum-style decoder, one
   * `session.run` per token, sampled in JavaScript in float64.
   */
  engine?: 'loop' | 'optimum';
  /** Tokens sampled per `session.run` by the `loop` engine (default 16; 1–1024). */
  stepsPerRun?: number;
};

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
  /** Samples `request.n` completions per prompt; an abort mid-way resolves with `finishReason: 'abort'`. */
  sample(request: SampleRequest, options?: { signal?: AbortSignal }): Promise<Completion[][]>;
  /** Streams tokens as they are sampled, then each completion when it finishes. */
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
  const raw = validateOptions<OnnxSamplerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
  });
  const sources = (['checkpoint', 'onnxPath'] as const).filter((key) => raw[key] !== undefined);
  if (sources.length !== 1) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName: FUNCTION,
      value: sources,
      expected: 'exactly one of options.checkpoint or options.onnxPath',
    });
  }
  if (
    raw.onnxPath !== undefined &&
    (typeof raw.onnxPath !== 'string' || raw.onnxPath.length === 0)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.onnxPath',
      functionName: FUNCTION,
      value: raw.onnxPath,
      expected: 'a path to an .onnx file',
    });
  }
  const executionProviders = validateExecutionProviders(raw.executionProviders, FUNCTION);
  const workers =
    raw.workers === undefined
      ? 1
      : validateInteger(raw.workers, {
          parameter: 'options.workers',
          functionName: FUNCTION,
          min: 0,
          max: 64,
        });
  const threads =
    raw.threads === undefined
      ? Math.max(1, Math.floor(availableParallelism() / Math.max(1, workers)))
      : validateInteger(raw.threads, {
          parameter: 'options.threads',
          functionName: FUNCTION,
          min: 1,
          max: 256,
        });
  const promptFormat =
    raw.promptFormat === undefined
      ? 'raw'
      : validateOneOf(raw.promptFormat, ['raw', 'chat'], {
          parameter: 'options.promptFormat',
          functionName: FUNCTION,
        });
  if (raw.allowSpinning !== undefined && typeof raw.allowSpinning !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.allowSpinning',
      functionName: FUNCTION,
      value: raw.allowSpinning,
      expected: 'a boolean',
    });
  }
  const engineType =
    raw.engine === undefined
      ? raw.checkpoint
        ? 'loop'
        : 'optimum'
      : validateOneOf(raw.engine, ['loop', 'optimum'], {
          parameter: 'options.engine',
          functionName: FUNCTION,
        });
  if (engineType === 'loop' && !raw.checkpoint) {
    throw new InvalidArgumentError({
      parameter: 'options.engine',
      functionName: FUNCTION,
      value: raw.engine,
      expected: "'optimum' with options.onnxPath (the loop graph is built from options.checkpoint)",
    });
  }
  const stepsPerRun =
    raw.stepsPerRun === undefined
      ? 16
      : validateInteger(raw.stepsPerRun, {
          parameter: 'options.stepsPerRun',
          functionName: FUNCTION,
          min: 1,
          max: 1024,
        });
  const kind: EngineKind =
    engineType === 'loop' ? { type: 'loop', stepsPerRun } : { type: 'optimum' };
  const encode = (source: Checkpoint): Uint8Array =>
    kind.type === 'loop' ? buildLoopGraph(source) : exportOnnx(source);
  const session: SessionSettings = {
    executionProviders,
    threads,
    allowSpinning: raw.allowSpinning ?? false,
  };
  let checkpoint = raw.checkpoint;
  const tokenizerFiles = raw.tokenizer ?? checkpoint?.tokenizer;
  const tokenizer = tokenizerFiles ? await createRolloutTokenizer(tokenizerFiles) : undefined;
  let eosTokenIds: number[];
  if (raw.eosTokenIds !== undefined) {
    if (
      !Array.isArray(raw.eosTokenIds) ||
      raw.eosTokenIds.some((id) => !Number.isInteger(id) || id < 0)
    ) {
      throw new InvalidArgumentError({
        parameter: 'options.eosTokenIds',
        functionName: FUNCTION,
        value: raw.eosTokenIds,
        expected: 'an array of non-negative integer token ids',
      });
    }
    eosTokenIds = [...raw.eosTokenIds];
  } else {
    const fromConfig = eosFromGenerationConfig(checkpoint?.generationConfig);
    eosTokenIds = fromConfig.length > 0 ? fromConfig : (tokenizer?.eosTokenIds ?? []);
  }
  const model: ModelSource = checkpoint
    ? toShared(encode(checkpoint), workers)
    : { path: raw.onnxPath! };
  const engine = await createEngine(kind, model, session, workers, tokenizerFiles, tokenizer);
  const modelId = raw.modelId ?? (raw.onnxPath ? `onnx:${raw.onnxPath}` : 'onnx:checkpoint');
  let closed = false;
  let lastWeightSync: WeightSyncTiming | undefined;

  const prepare = (request: SampleRequest, method: string) => {
    const name = `OnnxSampler.${method}`;
    const req = validateOptions<SampleRequest>(request, {
      parameter: 'request',
      functionName: name,
    });
    if (closed) throw new RlvrError(ErrorCode.UNAVAILABLE, `${name}() was called after close()`);
    if (!Array.isArray(req.prompts)) {
      throw new InvalidArgumentError({
        parameter: 'request.prompts',
        functionName: name,
        value: req.prompts,
        expected: 'an array of prompts (strings or token id arrays)',
      });
    }
    const n = validateInteger(req.n, { parameter: 'request.n', functionName: name, min: 1 });
    const maxNewTokens = validateInteger(req.maxNewTokens, {
      parameter: 'request.maxNewTokens',
      functionName: name,
      min: 0,
    });
    const sampling = resolveLogitsOptions(
      {
        temperature: req.temperature,
        topK: req.topK,
        topP: req.topP,
        minP: req.minP,
        repetitionPenalty: req.repetitionPenalty,
      },
      name,
      'request',
    );
    const stop = req.stop ?? [];
    if (!Array.isArray(stop) || stop.some((item) => typeof item !== 'string')) {
      throw new InvalidArgumentError({
        parameter: 'request.stop',
        functionName: name,
        value: stop,
        expected: 'an array of strings',
      });
    }
    if (stop.length > 0 && !tokenizer) {
      throw new InvalidArgumentError({
        parameter: 'request.stop',
        functionName: name,
        value: stop,
        expected: 'no stop strings when the sampler has no tokenizer (options.tokenizer)',
      });
    }
    const seed =
      req.seed === undefined
        ? Math.floor(Math.random() * 2 ** 32)
        : validateInteger(req.seed, { parameter: 'request.seed', functionName: name });
    const jobs: SequenceJob[] = [];
    req.prompts.forEach((prompt, promptIndex) => {
      let ids: number[];
      if (typeof prompt === 'string') {
        if (!tokenizer) {
          throw new InvalidArgumentError({
            parameter: `request.prompts[${promptIndex}]`,
            functionName: name,
            value: prompt,
            expected: 'token ids (the sampler has no tokenizer for text prompts)',
          });
        }
        ids =
          promptFormat === 'chat' ? tokenizer.applyChatTemplate(prompt) : tokenizer.encode(prompt);
      } else if (Array.isArray(prompt)) {
        ids = [...prompt];
        if (ids.some((id) => !Number.isInteger(id) || id < 0 || id >= engine.vocabSize)) {
          throw new InvalidArgumentError({
            parameter: `request.prompts[${promptIndex}]`,
            functionName: name,
            value: prompt,
            expected: `token ids in [0, ${engine.vocabSize})`,
          });
        }
      } else {
        throw new InvalidArgumentError({
          parameter: `request.prompts[${promptIndex}]`,
          functionName: name,
          value: prompt,
          expected: 'a string or an array of token ids',
        });
      }
      if (ids.length === 0) {
        throw new InvalidArgumentError({
          parameter: `request.prompts[${promptIndex}]`,
          functionName: name,
          value: prompt,
          expected: 'a prompt of at least one token',
        });
      }
      for (let sampleIndex = 0; sampleIndex < n; sampleIndex++)
        jobs.push({ promptIndex, sampleIndex, promptTokenIds: ids });
    });
    const settings: GenerationSettings = {
      sampling,
      maxNewTokens,
      stop: [...stop],
      seed,
      returnModelLogprobs: req.returnModelLogprobs === true,
      eosTokenIds,
    };
    return { jobs, settings, promptCount: req.prompts.length, n };
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
    modelId,
    vocabSize: engine.vocabSize,
    get lastWeightSync() {
      return lastWeightSync;
    },
    async sample(request, callOptions) {
      const signal = callOptions?.signal;
      if (signal?.aborted)
        throw new AbortedError({ operation: 'OnnxSampler.sample()', cause: signal.reason });
      const { jobs, settings, promptCount, n } = prepare(request, 'sample');
      return group(await engine.generate(jobs, settings, signal), promptCount, n);
    },
    stream(request, callOptions) {
      const signal = callOptions?.signal;
      if (signal?.aborted)
        throw new AbortedError({ operation: 'OnnxSampler.stream()', cause: signal.reason });
      const { jobs, settings } = prepare(request, 'stream');
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
