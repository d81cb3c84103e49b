import {
  InvalidArgumentError,
  rejectIneffective,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';

/** Which OpenAI endpoint samples: `/v1/completions` (raw text or token-id prompts) or `/v1/chat/completions`. */
export type OpenAIApi = 'completions' | 'chat';

/**
 * The server behind `baseURL`, for the parameters only some servers take. `'auto'` asks
 * `GET /models` once and reads `owned_by` (`vllm`, `sglang`, `llamacpp`, `openai` / `system`);
 * anything else is `'generic'`.
 */
export type ServerKind = 'auto' | 'vllm' | 'sglang' | 'llama-server' | 'openai' | 'generic';

/**
 * How `n` samples of a prompt are requested: `'n'` one request with `n`, `'parallel'` `n`
 * requests with `n: 1`, `'auto'` `n` until the server refuses it once (llama-server before
 * Dec 2025: "Only one completion choice is allowed"), then parallel for the sampler's life.
 */
export type NStrategy = 'auto' | 'n' | 'parallel';

/**
 * Which distribution the server's logprobs are of (vLLM's `--logprobs-mode`): `raw_logprobs`
 * (vLLM's default, and llama-server's without `post_sampling_probs`): `log softmax(logits)` of
 * the model before temperature, penalties and filtering (core's `modelLogprobs` convention);
 * `processed_logprobs`: after them (the distribution the token was drawn from).
 */
export type LogprobsMode = 'raw_logprobs' | 'processed_logprobs';

/** Options of {@link createOpenAISampler}. */
export type OpenAISamplerOptions = {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL: string;
  /** The model name the server serves (the request's `model`). */
  model: string;
  /** Which endpoint samples. */
  api: OpenAIApi;
  /** Bearer token (default: the `OPENAI_API_KEY` environment variable, else `'EMPTY'`, as vLLM's docs use). */
  apiKey?: string;
  /** Default `'auto'`. */
  server?: ServerKind;
  /** Default `'auto'`. */
  nStrategy?: NStrategy;
  /** Most HTTP requests in flight at once, across prompts and calls of this sampler (default 8). */
  concurrency?: number;
  /** Retries of a request that got 408 / 409 / 429 / 5xx / a timeout / no connection (default 5; `Retry-After` honoured, else exponential backoff with jitter). */
  maxRetries?: number;
  /** Per-attempt request timeout in milliseconds (default 600,000, the `openai` client's). */
  timeoutMs?: number;
  /** Default `'raw_logprobs'`. */
  logprobsMode?: LogprobsMode;
  /**
   * Vouch that the server's logprobs are the behaviour logprobs of each draw (`Completion.behaviourLogprobs: true`):
   * only with `logprobsMode: 'processed_logprobs'`, or for requests at temperature 1 without
   * filtering or penalty. Default false: served logprobs are not used as behaviour logprobs.
   */
  behaviourLogprobs?: boolean;
  /** Ask for per-token logprobs (and so token ids) on every request (default true; false for servers that refuse logprobs, e.g. OpenAI's reasoning models: completions are then text only). */
  logprobs?: boolean;
  /** Extra JSON fields merged into every request body (server-specific options, e.g. `{ chat_template_kwargs: { enable_thinking: false } }`); fields this sampler sets are refused. */
  extraBody?: Record<string, unknown>;
  /** Extra HTTP headers of every request. */
  headers?: Record<string, string>;
  /** Name for logs and rollouts (default `model`). */
  modelId?: string;
};

/** Every key {@link createOpenAISampler} accepts. */
export const OPENAI_SAMPLER_OPTION_KEYS = [
  'baseURL',
  'model',
  'api',
  'apiKey',
  'server',
  'nStrategy',
  'concurrency',
  'maxRetries',
  'timeoutMs',
  'logprobsMode',
  'behaviourLogprobs',
  'logprobs',
  'extraBody',
  'headers',
  'modelId',
] as const satisfies readonly (keyof OpenAISamplerOptions)[];

/** What an omitted option means. */
export const OPENAI_SAMPLER_DEFAULTS = Object.freeze({
  server: 'auto',
  nStrategy: 'auto',
  concurrency: 8,
  maxRetries: 5,
  timeoutMs: 600_000,
  logprobsMode: 'raw_logprobs',
  behaviourLogprobs: false,
  logprobs: true,
} as const);

/**
 * Body fields the sampler sets from the `SampleRequest` (or its own options); `extraBody` may not
 * set them (one name per concept: set them in the request).
 */
export const MANAGED_BODY_FIELDS = [
  'model',
  'prompt',
  'messages',
  'n',
  'seed',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'repetition_penalty',
  'repeat_penalty',
  'stop',
  'logprobs',
  'top_logprobs',
] as const;

/** Validated options with every default filled in. */
export type ResolvedOptions = Required<
  Omit<OpenAISamplerOptions, 'extraBody' | 'headers' | 'apiKey'>
> & {
  apiKey: string;
  extraBody: Record<string, unknown>;
  headers: Record<string, string>;
};

const NAME = 'createOpenAISampler';

function requireString(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError({
      parameter,
      functionName: NAME,
      value,
      expected: 'a non-empty string',
    });
  }
  return value;
}

function plainRecord(value: unknown, parameter: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName: NAME,
      value,
      expected: 'a plain object',
    });
  }
  return value as Record<string, unknown>;
}

/** Checks every option (strict keys, types, combinations) and fills the defaults. */
export function resolveOptions(input: unknown): ResolvedOptions {
  const options = validateOptions<OpenAISamplerOptions>(input, {
    parameter: 'options',
    functionName: NAME,
    known: OPENAI_SAMPLER_OPTION_KEYS,
    aliases: {
      base_url: 'baseURL',
      baseUrl: 'baseURL',
      api_key: 'apiKey',
      extra_body: 'extraBody',
      max_retries: 'maxRetries',
      timeout: 'timeoutMs',
      logprobs_mode: 'logprobsMode',
    },
  });
  const baseURL = requireString(options.baseURL, 'options.baseURL');
  try {
    new URL(baseURL);
  } catch (cause) {
    throw new InvalidArgumentError({
      parameter: 'options.baseURL',
      functionName: NAME,
      value: baseURL,
      expected: 'an absolute URL such as http://127.0.0.1:8000/v1',
      cause,
    });
  }
  const model = requireString(options.model, 'options.model');
  const api = validateOneOf(options.api, ['completions', 'chat'], {
    parameter: 'options.api',
    functionName: NAME,
  });
  const apiKey =
    options.apiKey === undefined
      ? (process.env.OPENAI_API_KEY ?? 'EMPTY')
      : requireString(options.apiKey, 'options.apiKey');
  const d = OPENAI_SAMPLER_DEFAULTS;
  const server = validateOneOf(
    options.server ?? d.server,
    ['auto', 'vllm', 'sglang', 'llama-server', 'openai', 'generic'],
    { parameter: 'options.server', functionName: NAME },
  );
  const nStrategy = validateOneOf(options.nStrategy ?? d.nStrategy, ['auto', 'n', 'parallel'], {
    parameter: 'options.nStrategy',
    functionName: NAME,
  });
  const concurrency = validateInteger(options.concurrency ?? d.concurrency, {
    parameter: 'options.concurrency',
    functionName: NAME,
    min: 1,
  });
  const maxRetries = validateInteger(options.maxRetries ?? d.maxRetries, {
    parameter: 'options.maxRetries',
    functionName: NAME,
    min: 0,
    max: 100,
  });
  const timeoutMs = validateInteger(options.timeoutMs ?? d.timeoutMs, {
    parameter: 'options.timeoutMs',
    functionName: NAME,
    min: 1,
  });
  const logprobsMode = validateOneOf(
    options.logprobsMode ?? d.logprobsMode,
    ['raw_logprobs', 'processed_logprobs'],
    { parameter: 'options.logprobsMode', functionName: NAME },
  );
  const booleanOption = (value: unknown, fallback: boolean, parameter: string) => {
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') {
      throw new InvalidArgumentError({
        parameter,
        functionName: NAME,
        value,
        expected: 'a boolean',
      });
    }
    return value;
  };
  const logprobs = booleanOption(options.logprobs, d.logprobs, 'options.logprobs');
  const behaviourLogprobs = booleanOption(
    options.behaviourLogprobs,
    d.behaviourLogprobs,
    'options.behaviourLogprobs',
  );
  if (behaviourLogprobs && !logprobs) {
    rejectIneffective({
      parameter: 'options.behaviourLogprobs',
      value: true,
      because: 'options.logprobs is false (no logprobs are asked for)',
      functionName: NAME,
    });
  }
  const extraBody = plainRecord(options.extraBody, 'options.extraBody');
  for (const key of Object.keys(extraBody)) {
    if ((MANAGED_BODY_FIELDS as readonly string[]).includes(key)) {
      throw new InvalidArgumentError({
        parameter: `options.extraBody.${key}`,
        functionName: NAME,
        value: extraBody[key],
        expected:
          'no value: the sampler sets this field from the SampleRequest (n, seed, maxNewTokens, temperature, topP, topK, minP, repetitionPenalty, stop, topLogprobs) or its own options',
      });
    }
  }
  const headers = plainRecord(options.headers, 'options.headers');
  for (const [key, value] of Object.entries(headers)) {
    if (typeof value !== 'string') {
      throw new InvalidArgumentError({
        parameter: `options.headers.${key}`,
        functionName: NAME,
        value,
        expected: 'a string',
      });
    }
  }
  const modelId =
    options.modelId === undefined ? model : requireString(options.modelId, 'options.modelId');
  return {
    baseURL,
    model,
    api,
    apiKey,
    server,
    nStrategy,
    concurrency,
    maxRetries,
    timeoutMs,
    logprobsMode,
    behaviourLogprobs,
    logprobs,
    extraBody,
    headers: headers as Record<string, string>,
    modelId,
  };
}
