import { availableParallelism } from 'node:os';
import { InvalidArgumentError, rejectIneffective } from '@rlvr/core';
import { type Checkpoint, countParameters, validateCheckpoint } from '@rlvr/model';
import {
  asserted,
  boolean,
  custom,
  defineOptions,
  integer,
  type OptionsInput,
  type OptionsOutput,
  object,
  oneOf,
  optional,
  parseOptions,
  text,
  withDefault,
} from '@rlvr/options';
import type { TokenizerFiles } from '../tokenizer/rollout-tokenizer.js';
import type { EngineKind } from './decoder-engine.js';
import {
  EXECUTION_PROVIDERS,
  type ExecutionProvider,
  type SessionSettings,
  validateExecutionProviders,
} from './ort.js';

const FUNCTION = 'createOnnxSampler';

/** How new weights reach the sessions (see {@link OnnxSamplerOptions.weightSync}). */
export type WeightSync = 'auto' | 'inputs' | 'rebuild';

const isTokenId = (id: unknown) => typeof id === 'number' && Number.isInteger(id) && id >= 0;

/**
 * `tokenizer`'s files: their keys are checked here, their contents (`json` included: it is
 * required by the type) when the tokenizer is built, with that step's message.
 */
const TOKENIZER_FILES = object({
  json: optional(
    custom<object>(() => true, 'the parsed tokenizer.json'),
    {
      description: 'The parsed `tokenizer.json`.',
      defaultText: 'required',
    },
  ),
  config: optional(
    custom<object>(() => true, 'the parsed tokenizer_config.json'),
    'The parsed `tokenizer_config.json` (special tokens, chat template).',
  ),
});

/**
 * The options of {@link createOnnxSampler}, declared once: {@link OnnxSamplerOptions},
 * {@link ONNX_SAMPLER_OPTION_KEYS}, {@link ONNX_SAMPLER_DEFAULTS}, the validation and the README
 * table come from it. Give exactly one of `checkpoint`, `onnxPath`.
 */
export const ONNX_SAMPLER_OPTIONS = defineOptions(
  {
    checkpoint: optional(
      asserted<Checkpoint>(
        (value, parameter) =>
          validateCheckpoint(value, { functionName: FUNCTION, parameter, checkFinite: false }),
        'a checkpoint object { config, tensors }',
      ),
      'A model from `@rlvr/model` (exported to ONNX in memory; enables `updateWeights`). Give exactly one of `checkpoint`, `onnxPath`.',
    ),
    onnxPath: optional(
      text('a path to an .onnx file'),
      'Path to an Optimum-style decoder `.onnx` file (e.g. `<checkpoint>/onnx/model.onnx`).',
    ),
    tokenizer: optional(TOKENIZER_FILES, {
      description:
        'Tokenizer files `{ json, config? }`; needed for text prompts, text and stop strings.',
      defaultText: '`checkpoint.tokenizer`',
    }),
    promptFormat: withDefault(
      oneOf(['raw', 'chat']),
      'raw',
      '`raw`: text prompts are encoded as is; `chat`: wrapped as one user message with the chat template.',
    ),
    executionProviders: withDefault(
      asserted<ExecutionProvider[]>(
        (value) => validateExecutionProviders(value, FUNCTION),
        `a non-empty array of ${EXECUTION_PROVIDERS.map((name) => `'${name}'`).join(', ')}`,
      ),
      ['cpu'],
      'Execution providers in order of preference.',
    ),
    threads: optional(integer({ min: 1, max: 256 }), {
      description: 'Intra-op threads per session.',
      defaultText: 'available cores / workers, at least 1',
    }),
    workers: withDefault(
      integer({ min: 0, max: 64 }),
      1,
      'Worker threads, each with its own session; 0 runs on the calling thread.',
    ),
    eosTokenIds: optional(
      custom<number[]>(
        (value) => Array.isArray(value) && value.every(isTokenId),
        'an array of non-negative integer token ids',
      ),
      {
        description: 'EOS token ids (each source may be a list, e.g. Llama 3 has three).',
        defaultText:
          "as in Hugging Face: `generation_config.json`'s `eos_token_id`, else `config.json`'s, else the tokenizer's `eos_token`",
      },
    ),
    modelId: optional(text('a non-empty string'), {
      description: 'Name reported as `Sampler.modelId`.',
      defaultText: '`onnx:<onnxPath>` or `onnx:checkpoint`',
    }),
    allowSpinning: withDefault(
      boolean(),
      false,
      'Let ORT threads spin while idle (false is kinder to a shared machine).',
    ),
    engine: optional(oneOf(['loop', 'optimum']), {
      description:
        '`loop`: a graph built from the checkpoint samples `stepsPerRun` tokens per `session.run` in-graph (same processors, seeds and logprobs as `optimum`, in float32); `optimum`: the Optimum-style decoder, one `session.run` per token, sampled in JavaScript in float64 (the only choice with `onnxPath`).',
      defaultText:
        'with a checkpoint: `loop` from 0.3M parameters (README "Engines"), `optimum` below, or `loop` when `stepsPerRun` or `weightSync: inputs` is set',
    }),
    stepsPerRun: optional(integer({ min: 1, max: 1024 }), {
      description:
        'Tokens sampled per `session.run` by the `loop` engine (setting it without `engine` selects the loop engine).',
      defaultText: '`16`',
    }),
    // 'inputs': the weights are graph inputs; an update is a copy into the arrays the sessions
    // read (58M parameters, 2 workers: 0.14 s to the first token), but every matrix product
    // re-packs its weights per run (17-31% more CPU time per token, README "Performance");
    // 'rebuild': built into the graph (pre-packed once, fastest decoding); an update encodes a new
    // graph and opens new sessions (58M: 1.7-1.9 s); 'auto': built in until the first
    // updateWeights, then graph inputs. The optimum engine always rebuilds.
    weightSync: withDefault(
      oneOf(['auto', 'inputs', 'rebuild'] as const satisfies readonly WeightSync[]),
      'auto',
      'How the `loop` engine takes new weights: `inputs` (graph inputs, copied in place; slower decoding), `rebuild` (built into the graph; an update opens new sessions), `auto` (built in until the first `updateWeights`, then inputs). The `optimum` engine always rebuilds; `inputs` selects the loop engine when `engine` is not given. Needs `checkpoint`.',
    ),
  },
  { parameter: 'options', functionName: FUNCTION },
);

/**
 * Options of {@link createOnnxSampler} (see {@link ONNX_SAMPLER_OPTIONS} for each one). Give
 * exactly one of `checkpoint`, `onnxPath`.
 */
export type OnnxSamplerOptions = Omit<
  OptionsInput<typeof ONNX_SAMPLER_OPTIONS.schema>,
  'tokenizer'
> & {
  tokenizer?: TokenizerFiles;
};

/**
 * Every key of {@link OnnxSamplerOptions}: the keys `createOnnxSampler` accepts (any other is an
 * `UNKNOWN_OPTION` error). Exported so that layers passing sampler options through (apps, CLIs)
 * check against the same list instead of a copy.
 */
export const ONNX_SAMPLER_OPTION_KEYS = ONNX_SAMPLER_OPTIONS.keys;

/**
 * The call options of `sample`, `stream` and `sampleTrajectories`, declared once: `{ signal }`
 * (core's abort contract).
 */
export const CALL_OPTIONS_SCHEMA = object({
  signal: optional(
    custom<AbortSignal>((value) => value instanceof AbortSignal, 'an AbortSignal'),
    "Aborts the call (core's abort contract).",
  ),
});

/** Checks a call's options (see {@link CALL_OPTIONS_SCHEMA}). @internal */
export function readCallOptions(value: unknown, functionName: string) {
  return parseOptions(CALL_OPTIONS_SCHEMA, value, { parameter: 'options', functionName });
}

/** What an omitted option of {@link createOnnxSampler} means (the others: see their defaultText). */
export const ONNX_SAMPLER_DEFAULTS = ONNX_SAMPLER_OPTIONS.defaults;

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

type Parsed = OptionsOutput<typeof ONNX_SAMPLER_OPTIONS.schema>;

/** The cross-field rules of `weightSync` (its value is checked by the schema). */
function checkWeightSync(given: unknown, parsed: Parsed, checkpoint: Checkpoint | undefined): void {
  const { weightSync } = parsed;
  if (given !== undefined && !checkpoint) {
    rejectIneffective({
      parameter: 'options.weightSync',
      value: weightSync,
      because:
        'a sampler from options.onnxPath cannot take new weights (updateWeights needs options.checkpoint)',
      functionName: FUNCTION,
    });
  }
  if (weightSync === 'inputs' && parsed.engine === 'optimum') {
    throw new InvalidArgumentError({
      parameter: 'options.weightSync',
      functionName: FUNCTION,
      value: weightSync,
      expected:
        "'auto' or 'rebuild' with engine 'optimum' (its weights are built into the graph; 'inputs' is a loop-engine setting)",
    });
  }
}

function resolveEngine(parsed: Parsed, checkpoint: Checkpoint | undefined) {
  const { engine, stepsPerRun, weightSync } = parsed;
  if (engine === 'loop' && !checkpoint) {
    throw new InvalidArgumentError({
      parameter: 'options.engine',
      functionName: FUNCTION,
      value: engine,
      expected: "'optimum' with options.onnxPath (the loop graph is built from options.checkpoint)",
    });
  }
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

/**
 * Checks every option of {@link createOnnxSampler} (unknown keys, types, combinations that would
 * do nothing) and fills in the defaults.
 * @internal
 */
export function resolveSamplerOptions(options: OnnxSamplerOptions): ResolvedSamplerOptions {
  const parsed = ONNX_SAMPLER_OPTIONS.parse(options);
  const sources = (['checkpoint', 'onnxPath'] as const).filter((key) => parsed[key] !== undefined);
  if (sources.length !== 1) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName: FUNCTION,
      value: sources,
      expected: 'exactly one of options.checkpoint or options.onnxPath',
    });
  }
  const checkpoint =
    parsed.checkpoint === undefined
      ? undefined
      : // shapes and names (the schema checked them; this returns the parsed config); the
        // finite-value check runs once, when the graph is encoded
        validateCheckpoint(parsed.checkpoint, {
          functionName: FUNCTION,
          parameter: 'options.checkpoint',
          checkFinite: false,
        });
  const { workers, promptFormat, onnxPath } = parsed;
  const threads =
    parsed.threads ?? Math.max(1, Math.floor(availableParallelism() / Math.max(1, workers)));
  const tokenizerFiles: TokenizerFiles | undefined =
    parsed.tokenizer === undefined ? checkpoint?.tokenizer : (options.tokenizer as TokenizerFiles);
  if (promptFormat === 'chat' && !tokenizerFiles) {
    rejectIneffective({
      parameter: 'options.promptFormat',
      value: promptFormat,
      because:
        'the sampler has no tokenizer (options.tokenizer or checkpoint.tokenizer), so it takes token-id prompts only',
      functionName: FUNCTION,
    });
  }
  checkWeightSync((options as Partial<OnnxSamplerOptions>).weightSync, parsed, checkpoint);
  const executionProviders = [...validateExecutionProviders(parsed.executionProviders, FUNCTION)];
  return {
    checkpoint,
    onnxPath,
    tokenizerFiles,
    promptFormat,
    workers,
    kind: resolveEngine(parsed, checkpoint),
    session: { executionProviders, threads, allowSpinning: parsed.allowSpinning },
    eosTokenIds: parsed.eosTokenIds === undefined ? undefined : [...parsed.eosTokenIds],
    modelId: parsed.modelId ?? (onnxPath ? `onnx:${onnxPath}` : 'onnx:checkpoint'),
    weightSync: parsed.weightSync,
  };
}
