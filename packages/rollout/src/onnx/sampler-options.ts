import { availableParallelism } from 'node:os';
import {
  InvalidArgumentError,
  rejectIneffective,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { type Checkpoint, countParameters, validateCheckpoint } from '@rlvr/model';
import type { TokenizerFiles } from '../tokenizer/rollout-tokenizer.js';
import type { EngineKind } from './decoder-engine.js';
import { type ExecutionProvider, type SessionSettings, validateExecutionProviders } from './ort.js';

const FUNCTION = 'createOnnxSampler';

/** Options of {@link createOnnxSampler}. Give exactly one of `checkpoint`, `onnxPath`. */
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
  /**
   * EOS token ids (default, as in Hugging Face: `generation_config.json`'s `eos_token_id`, else
   * `config.json`'s, else the tokenizer's `eos_token`; each may be a list, e.g. Llama 3's three).
   */
  eosTokenIds?: number[];
  /** Name reported as `Sampler.modelId` (default `onnx:<onnxPath>` or `onnx:checkpoint`). */
  modelId?: string;
  /** Let ORT threads spin while idle (default false: kinder to a shared machine). */
  allowSpinning?: boolean;
  /**
   * `loop`: a graph built from the checkpoint samples `stepsPerRun` tokens per `session.run`
   * in-graph (same processors, seeds and logprobs as `optimum`, computed in float32); `optimum`:
   * the Optimum-style decoder, one `session.run` per token, sampled in JavaScript in float64 (the
   * only choice with `onnxPath`). Default with a checkpoint: `loop` from 0.3M parameters (the
   * faster one per GRPO step at every size measured; see {@link LOOP_ENGINE_MIN_PARAMETERS}),
   * `optimum` below, or `loop` when `stepsPerRun` or `weightSync: 'inputs'` is set.
   */
  engine?: 'loop' | 'optimum';
  /** Tokens sampled per `session.run` by the `loop` engine (default 16; 1–1024). */
  stepsPerRun?: number;
  /**
   * How the `loop` engine takes new weights (`updateWeights`):
   * - `'inputs'`: the weights are graph inputs from the start; an update is a copy into the arrays
   *   the sessions read (58M parameters, 2 workers: 0.14 s to the first token on a near-idle
   *   machine), but every matrix product re-packs its weights on each run: 17–31% more CPU time
   *   per token at top-p 1 (58M and 5M, README "Performance");
   * - `'rebuild'`: the weights are built into the graph (ONNX Runtime pre-packs them once, the
   *   fastest decoding); an update encodes a new graph and opens new sessions (58M: 1.7–1.9 s on
   *   a near-idle machine);
   * - `'auto'` (default): built in (fastest decoding) until the first `updateWeights`, which
   *   switches to graph inputs (a new, small graph once; in-place copies after that). A sampler
   *   that never gets new weights decodes at full speed; one updated every step pays the
   *   `'inputs'` cost from the second step on.
   *
   * The `optimum` engine always rebuilds (`'auto'` or `'rebuild'`); `'inputs'` selects the `loop`
   * engine when `engine` is not given. Needs `checkpoint` (a sampler from `onnxPath` cannot take
   * new weights).
   */
  weightSync?: WeightSync;
};

/** How new weights reach the sessions (see {@link OnnxSamplerOptions.weightSync}). */
export type WeightSync = 'auto' | 'inputs' | 'rebuild';

/**
 * Every key of {@link OnnxSamplerOptions}: the keys `createOnnxSampler` accepts (any other is an
 * `UNKNOWN_OPTION` error). Exported so that layers passing sampler options through (apps, CLIs)
 * check against the same list instead of a copy.
 */
export const ONNX_SAMPLER_OPTION_KEYS = [
  'checkpoint',
  'onnxPath',
  'tokenizer',
  'promptFormat',
  'executionProviders',
  'threads',
  'workers',
  'eosTokenIds',
  'modelId',
  'allowSpinning',
  'engine',
  'stepsPerRun',
  'weightSync',
] as const satisfies readonly (keyof OnnxSamplerOptions)[];

/**
 * The default engine for a checkpoint: `loop` from this many parameters on (any worker count),
 * `optimum` below. Measured per GRPO step on 2 vCPUs in the steady state of a run (an in-place
 * weight update + 16 prompts × 8 samples × 48 tokens; `bench/engine-choice.bench.ts`, README
 * "Engines"): the loop engine took 0.50–0.60× the time of `optimum` at 0.31M, 0.8M and 4.9M
 * parameters, with one worker and with two (it used to lose below 1M / 5M parameters while each
 * of its weight updates rebuilt its session, ~1 s). Below the smallest size measured `optimum`
 * stays the default: opening a loop sampler costs ~0.5–2.5 s more, once, which short-lived
 * samplers of tiny models (tests, quick evaluations) do not win back.
 * @internal
 */
export const LOOP_ENGINE_MIN_PARAMETERS = 300_000;

/** The engine `createOnnxSampler` uses for a checkpoint when `engine` is not given. @internal */
export function defaultEngine(parameters: number): 'loop' | 'optimum' {
  return parameters >= LOOP_ENGINE_MIN_PARAMETERS ? 'loop' : 'optimum';
}

/** Validated options with every default filled in. @internal */
export type ResolvedSamplerOptions = {
  checkpoint: Checkpoint | undefined;
  onnxPath: string | undefined;
  tokenizerFiles: TokenizerFiles | undefined;
  promptFormat: 'raw' | 'chat';
  workers: number;
  kind: EngineKind;
  session: SessionSettings;
  eosTokenIds: number[] | undefined;
  modelId: string;
  /** `'auto'` or `'rebuild'` for the `optimum` engine (both rebuild). */
  weightSync: WeightSync;
};

function resolveWeightSync(
  raw: Partial<OnnxSamplerOptions>,
  checkpoint: Checkpoint | undefined,
): WeightSync | undefined {
  if (raw.weightSync === undefined) return undefined;
  const weightSync = validateOneOf(raw.weightSync, ['auto', 'inputs', 'rebuild'] as const, {
    parameter: 'options.weightSync',
    functionName: FUNCTION,
  });
  if (!checkpoint) {
    rejectIneffective({
      parameter: 'options.weightSync',
      value: weightSync,
      because:
        'a sampler from options.onnxPath cannot take new weights (updateWeights needs options.checkpoint)',
      functionName: FUNCTION,
    });
  }
  if (weightSync === 'inputs' && raw.engine === 'optimum') {
    throw new InvalidArgumentError({
      parameter: 'options.weightSync',
      functionName: FUNCTION,
      value: weightSync,
      expected:
        "'auto' or 'rebuild' with engine 'optimum' (its weights are built into the graph; 'inputs' is a loop-engine setting)",
    });
  }
  return weightSync;
}

function resolveEngine(
  raw: Partial<OnnxSamplerOptions>,
  checkpoint: Checkpoint | undefined,
  weightSync: WeightSync | undefined,
) {
  const engine =
    raw.engine === undefined
      ? undefined
      : validateOneOf(raw.engine, ['loop', 'optimum'], {
          parameter: 'options.engine',
          functionName: FUNCTION,
        });
  if (engine === 'loop' && !checkpoint) {
    throw new InvalidArgumentError({
      parameter: 'options.engine',
      functionName: FUNCTION,
      value: raw.engine,
      expected: "'optimum' with options.onnxPath (the loop graph is built from options.checkpoint)",
    });
  }
  const stepsPerRun =
    raw.stepsPerRun === undefined
      ? undefined
      : validateInteger(raw.stepsPerRun, {
          parameter: 'options.stepsPerRun',
          functionName: FUNCTION,
          min: 1,
          max: 1024,
        });
  if (stepsPerRun !== undefined && (engine === 'optimum' || !checkpoint)) {
    rejectIneffective({
      parameter: 'options.stepsPerRun',
      value: stepsPerRun,
      because: `the 'optimum' engine${checkpoint ? '' : ' (the only one with options.onnxPath)'} samples one token per session.run; stepsPerRun applies to the 'loop' engine`,
      functionName: FUNCTION,
    });
  }
  const chosen =
    engine ??
    (!checkpoint
      ? 'optimum'
      : stepsPerRun !== undefined || weightSync === 'inputs'
        ? 'loop'
        : defaultEngine(countParameters(checkpoint.config)));
  return chosen === 'loop'
    ? ({ type: 'loop', stepsPerRun: stepsPerRun ?? 16 } as const)
    : ({ type: 'optimum' } as const);
}

function resolveTokenizerFiles(raw: Partial<OnnxSamplerOptions>): TokenizerFiles | undefined {
  if (raw.tokenizer === undefined) return raw.checkpoint?.tokenizer;
  validateOptions<TokenizerFiles>(raw.tokenizer, {
    parameter: 'options.tokenizer',
    functionName: FUNCTION,
    known: ['json', 'config'],
  });
  return raw.tokenizer;
}

function resolveEosTokenIds(value: unknown): number[] | undefined {
  if (value === undefined) return undefined;
  if (
    !Array.isArray(value) ||
    value.some((id) => typeof id !== 'number' || !Number.isInteger(id) || id < 0)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.eosTokenIds',
      functionName: FUNCTION,
      value,
      expected: 'an array of non-negative integer token ids',
    });
  }
  return [...value];
}

/**
 * Checks every option of {@link createOnnxSampler} (unknown keys, types, combinations that would
 * do nothing) and fills in the defaults.
 * @internal
 */
export function resolveSamplerOptions(options: OnnxSamplerOptions): ResolvedSamplerOptions {
  const raw = validateOptions<OnnxSamplerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: ONNX_SAMPLER_OPTION_KEYS,
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
  const checkpoint =
    raw.checkpoint === undefined
      ? undefined
      : // shapes and names here; the finite-value check runs once, when the graph is encoded
        validateCheckpoint(raw.checkpoint, {
          functionName: FUNCTION,
          parameter: 'options.checkpoint',
          checkFinite: false,
        });
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
  const tokenizerFiles = resolveTokenizerFiles(raw);
  const promptFormat =
    raw.promptFormat === undefined
      ? 'raw'
      : validateOneOf(raw.promptFormat, ['raw', 'chat'], {
          parameter: 'options.promptFormat',
          functionName: FUNCTION,
        });
  if (promptFormat === 'chat' && !tokenizerFiles) {
    rejectIneffective({
      parameter: 'options.promptFormat',
      value: promptFormat,
      because:
        'the sampler has no tokenizer (options.tokenizer or checkpoint.tokenizer), so it takes token-id prompts only',
      functionName: FUNCTION,
    });
  }
  if (raw.allowSpinning !== undefined && typeof raw.allowSpinning !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.allowSpinning',
      functionName: FUNCTION,
      value: raw.allowSpinning,
      expected: 'a boolean',
    });
  }
  if (raw.modelId !== undefined && (typeof raw.modelId !== 'string' || raw.modelId === '')) {
    throw new InvalidArgumentError({
      parameter: 'options.modelId',
      functionName: FUNCTION,
      value: raw.modelId,
      expected: 'a non-empty string',
    });
  }
  const weightSync = resolveWeightSync(raw, checkpoint);
  return {
    checkpoint,
    onnxPath: raw.onnxPath,
    tokenizerFiles,
    promptFormat,
    workers,
    kind: resolveEngine(raw, checkpoint, weightSync),
    session: { executionProviders, threads, allowSpinning: raw.allowSpinning ?? false },
    eosTokenIds: resolveEosTokenIds(raw.eosTokenIds),
    modelId: raw.modelId ?? (raw.onnxPath ? `onnx:${raw.onnxPath}` : 'onnx:checkpoint'),
    weightSync: weightSync ?? 'auto',
  };
}
