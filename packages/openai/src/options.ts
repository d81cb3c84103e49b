import { InvalidArgumentError, rejectIneffective } from '@rlvr/core';
import {
  asserted,
  boolean,
  defineOptions,
  integer,
  type OptionsInput,
  oneOf,
  optional,
  required,
  text,
  withDefault,
} from '@rlvr/options';

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

const NAME = 'createOpenAISampler';
const SERVERS = [
  'auto',
  'vllm',
  'sglang',
  'llama-server',
  'openai',
  'generic',
] as const satisfies readonly ServerKind[];
const nonEmpty = () => text('a non-empty string');

/**
 * The options of {@link createOpenAISampler}, declared once: {@link OpenAISamplerOptions},
 * {@link OPENAI_SAMPLER_OPTION_KEYS}, {@link OPENAI_SAMPLER_DEFAULTS}, the validation and the
 * README table come from it.
 */
export const OPENAI_SAMPLER_OPTIONS = defineOptions(
  {
    baseURL: required(
      asserted<string>(assertBaseURL, 'an absolute URL such as http://127.0.0.1:8000/v1'),
      'The endpoint, e.g. `http://127.0.0.1:8000/v1`.',
    ),
    model: required(nonEmpty(), "The model name the server serves (the request's `model`)."),
    api: required(
      oneOf(['completions', 'chat'] as const satisfies readonly OpenAIApi[]),
      "`'completions'` (text or token-id prompts) or `'chat'` (a text prompt is one user message; the server applies its chat template).",
    ),
    apiKey: optional(nonEmpty(), {
      description: 'Bearer token.',
      defaultText: "the `OPENAI_API_KEY` environment variable, else `'EMPTY'` (as vLLM's docs use)",
    }),
    server: withDefault(
      oneOf(SERVERS),
      'auto',
      "Which server-specific fields to send: `'vllm'`, `'sglang'`, `'llama-server'`, `'openai'`, `'generic'`; `'auto'` reads `owned_by` of `GET /models` once (`vllm`, `sglang`, `llamacpp`, `openai`/`system`); anything else, or no `/models`, is `'generic'`.",
    ),
    nStrategy: withDefault(
      oneOf(['auto', 'n', 'parallel'] as const satisfies readonly NStrategy[]),
      'auto',
      "`'n'`: one request with `n` per prompt; `'parallel'`: `n` requests with `n: 1`; `'auto'`: `n` until the server refuses it once (\"Only one completion choice is allowed\", llama-server before Dec 2025), then parallel for the sampler's life (`sampler.nStrategy` says which); a first answer with one choice for `n` > 1 (a server that ignores `n`: Ollama) also switches, the probe's sample dropped and asked again with the same seed.",
    ),
    concurrency: withDefault(
      integer({ min: 1 }),
      8,
      'HTTP requests in flight, across the prompts and calls of the sampler.',
    ),
    maxRetries: withDefault(
      integer({ min: 0, max: 100 }),
      5,
      "The `openai` client's retries (408 / 409 / 429 / 5xx, timeouts, refused connections; `Retry-After` / `retry-after-ms` honoured, else 0.5 s · 2^i, at most 8 s, minus up to 25% jitter).",
    ),
    timeoutMs: withDefault(
      integer({ min: 1 }),
      600_000,
      "Per-attempt request timeout in milliseconds (the `openai` client's default).",
    ),
    logprobsMode: withDefault(
      oneOf(['raw_logprobs', 'processed_logprobs'] as const satisfies readonly LogprobsMode[]),
      'raw_logprobs',
      "What the server's logprobs are of: vLLM's `--logprobs-mode` (its default `raw_logprobs`: `log softmax(logits)` before temperature, penalties and filtering; llama-server without `post_sampling_probs` is the same) or `'processed_logprobs'` (after them).",
    ),
    behaviourLogprobs: withDefault(
      boolean(),
      false,
      "Vouch that the server's logprobs are the draw's behaviour logprobs (`Completion.behaviourLogprobs: true`); allowed with `processed_logprobs`, or at temperature 1 without filtering or penalty.",
    ),
    logprobs: withDefault(
      boolean(),
      true,
      "Ask for per-token logprobs (and so token ids); false for servers that refuse them (OpenAI's reasoning models): completions are then text only.",
    ),
    extraBody: optional(
      asserted<Record<string, unknown>>(assertExtraBody, 'a plain object'),
      'Extra JSON fields of every request (`chat_template_kwargs`, `guided_json`, …); a field the sampler sets from the `SampleRequest` (`n`, `seed`, `temperature`, `top_k`, `logprobs`, `stop`, …) is refused by name.',
    ),
    headers: optional(
      asserted<Record<string, string>>(assertHeaders, 'a plain object'),
      'Extra HTTP headers of every request.',
    ),
    modelId: optional(nonEmpty(), {
      description: 'Name for logs and rollouts.',
      defaultText: '`model`',
    }),
  },
  {
    parameter: 'options',
    functionName: NAME,
    aliases: {
      base_url: 'baseURL',
      baseUrl: 'baseURL',
      api_key: 'apiKey',
      extra_body: 'extraBody',
      max_retries: 'maxRetries',
      timeout: 'timeoutMs',
      logprobs_mode: 'logprobsMode',
    },
  },
);

/** Options of {@link createOpenAISampler} (see {@link OPENAI_SAMPLER_OPTIONS} for each one). */
export type OpenAISamplerOptions = OptionsInput<typeof OPENAI_SAMPLER_OPTIONS.schema>;

/** Every key {@link createOpenAISampler} accepts. */
export const OPENAI_SAMPLER_OPTION_KEYS = OPENAI_SAMPLER_OPTIONS.keys;

/** What an omitted option means. */
export const OPENAI_SAMPLER_DEFAULTS = OPENAI_SAMPLER_OPTIONS.defaults;

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

function assertBaseURL(value: unknown): void {
  const baseURL = requireString(value, 'options.baseURL');
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
}

function assertExtraBody(value: unknown): void {
  const extraBody = plainRecord(value, 'options.extraBody');
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
}

function assertHeaders(value: unknown): void {
  for (const [key, header] of Object.entries(plainRecord(value, 'options.headers'))) {
    if (typeof header !== 'string') {
      throw new InvalidArgumentError({
        parameter: `options.headers.${key}`,
        functionName: NAME,
        value: header,
        expected: 'a string',
      });
    }
  }
}

/** Checks every option (strict keys, types, combinations) and fills the defaults. */
export function resolveOptions(input: unknown): ResolvedOptions {
  const options = OPENAI_SAMPLER_OPTIONS.parse(input);
  if (options.behaviourLogprobs && !options.logprobs) {
    rejectIneffective({
      parameter: 'options.behaviourLogprobs',
      value: true,
      because: 'options.logprobs is false (no logprobs are asked for)',
      functionName: NAME,
    });
  }
  return {
    ...options,
    apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'EMPTY',
    extraBody: options.extraBody ?? {},
    headers: options.headers ?? {},
    modelId: options.modelId ?? options.model,
  };
}
