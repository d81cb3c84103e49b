import {
  type ConfidenceStop,
  InvalidArgumentError,
  type Prompt,
  SAMPLE_REQUEST_DEFAULTS,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  validateConfidenceRequest,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import type { OpenAIApi, ResolvedOptions, ServerKind } from './options.js';

/** The server families the request body is written for (`'auto'` resolved). */
export type Dialect = Exclude<ServerKind, 'auto'>;

/** A validated `SampleRequest` with core's defaults filled in. */
export type ResolvedRequest = {
  prompts: readonly Prompt[];
  n: number;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  repetitionPenalty: number;
  stop: readonly string[] | undefined;
  seed: number | undefined;
  returnModelLogprobs: boolean;
  /** 0: not asked. */
  topLogprobs: number;
  confidenceStop: ConfidenceStop | undefined;
};

const FN = 'OpenAISampler.sample';

/** Checks a request (strict keys, ranges) and fills core's sampling defaults. */
export function resolveRequest(request: unknown): ResolvedRequest {
  const value = validateOptions<SampleRequest>(request, {
    parameter: 'request',
    functionName: FN,
    known: SAMPLE_REQUEST_KEYS,
  }) as SampleRequest;
  if (!Array.isArray(value.prompts) || value.prompts.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'request.prompts',
      functionName: FN,
      value: value.prompts,
      expected: 'a non-empty array of prompts (strings or token-id arrays)',
    });
  }
  for (const [index, prompt] of value.prompts.entries()) {
    const ok =
      (typeof prompt === 'string' && prompt.length > 0) ||
      (Array.isArray(prompt) &&
        prompt.length > 0 &&
        prompt.every((id) => Number.isInteger(id) && id >= 0));
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `request.prompts[${index}]`,
        functionName: FN,
        value: prompt,
        expected: 'a non-empty string or a non-empty array of token ids',
      });
    }
  }
  const d = SAMPLE_REQUEST_DEFAULTS;
  const n = validateInteger(value.n, { parameter: 'request.n', functionName: FN, min: 1 });
  const maxNewTokens = validateInteger(value.maxNewTokens, {
    parameter: 'request.maxNewTokens',
    functionName: FN,
    min: 1,
  });
  const temperature = validateNumber(value.temperature ?? d.temperature, {
    parameter: 'request.temperature',
    functionName: FN,
    min: 0,
  });
  const topP = validateNumber(value.topP ?? d.topP, {
    parameter: 'request.topP',
    functionName: FN,
    min: 0,
    max: 1,
    exclusiveMin: true,
  });
  const topK = validateInteger(value.topK ?? d.topK, {
    parameter: 'request.topK',
    functionName: FN,
    min: 0,
  });
  const minP = validateNumber(value.minP ?? d.minP, {
    parameter: 'request.minP',
    functionName: FN,
    min: 0,
    max: 1,
  });
  const repetitionPenalty = validateNumber(value.repetitionPenalty ?? d.repetitionPenalty, {
    parameter: 'request.repetitionPenalty',
    functionName: FN,
    min: 0,
    exclusiveMin: true,
  });
  let stop: string[] | undefined;
  if (value.stop !== undefined) {
    if (
      !Array.isArray(value.stop) ||
      !value.stop.every((item) => typeof item === 'string' && item.length > 0)
    ) {
      throw new InvalidArgumentError({
        parameter: 'request.stop',
        functionName: FN,
        value: value.stop,
        expected: 'an array of non-empty strings',
      });
    }
    stop = value.stop.length === 0 ? undefined : [...value.stop];
  }
  const seed =
    value.seed === undefined
      ? undefined
      : validateInteger(value.seed, { parameter: 'request.seed', functionName: FN, min: 0 });
  if (value.returnModelLogprobs !== undefined && typeof value.returnModelLogprobs !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'request.returnModelLogprobs',
      functionName: FN,
      value: value.returnModelLogprobs,
      expected: 'a boolean',
    });
  }
  const { topLogprobs, confidenceStop } = validateConfidenceRequest(value, FN);
  return {
    prompts: value.prompts,
    n,
    maxNewTokens,
    temperature,
    topP,
    topK,
    minP,
    repetitionPenalty,
    stop,
    seed,
    returnModelLogprobs: value.returnModelLogprobs === true,
    topLogprobs,
    confidenceStop,
  };
}

/** True when the request draws from the model distribution itself (temperature 1, no filter, no penalty). */
export function isNeutral(request: ResolvedRequest): boolean {
  return (
    request.temperature === 1 &&
    request.topP === 1 &&
    request.topK === 0 &&
    request.minP === 0 &&
    request.repetitionPenalty === 1
  );
}

/**
 * Checks what this request needs against the sampler's options and the server: per-token data
 * needs logprobs; vouched behaviour logprobs need a distribution that is the draw's; OpenAI's own
 * API has no top-k / min-p / repetition penalty.
 */
export function checkRequestAgainst(
  request: ResolvedRequest,
  options: ResolvedOptions,
  dialect: Dialect,
): void {
  const perToken =
    request.topLogprobs > 0 || request.confidenceStop !== undefined || request.returnModelLogprobs;
  if (perToken && !options.logprobs) {
    throw new InvalidArgumentError({
      parameter: request.topLogprobs > 0 ? 'request.topLogprobs' : 'request.returnModelLogprobs',
      functionName: FN,
      value: request.topLogprobs > 0 ? request.topLogprobs : request.returnModelLogprobs,
      expected: 'no per-token data, since the sampler was created with logprobs: false',
    });
  }
  if (
    request.returnModelLogprobs &&
    options.logprobsMode !== 'raw_logprobs' &&
    !isNeutral(request)
  ) {
    throw new InvalidArgumentError({
      parameter: 'request.returnModelLogprobs',
      functionName: FN,
      value: true,
      expected:
        "a sampler with logprobsMode 'raw_logprobs' (the server reports the processed distribution, not the model's)",
    });
  }
  if (request.topLogprobs > 0 && options.logprobsMode !== 'raw_logprobs' && !isNeutral(request)) {
    throw new InvalidArgumentError({
      parameter: 'request.topLogprobs',
      functionName: FN,
      value: request.topLogprobs,
      expected:
        "a sampler with logprobsMode 'raw_logprobs': core's top logprobs are of the model distribution, the server reports the processed one",
    });
  }
  if (options.behaviourLogprobs && options.logprobsMode === 'raw_logprobs' && !isNeutral(request)) {
    throw new InvalidArgumentError({
      parameter: 'request.temperature',
      functionName: FN,
      value: request.temperature,
      expected:
        "temperature 1 with no topK / topP / minP / repetitionPenalty: the sampler vouches for behaviour logprobs, but the server's raw_logprobs are of the model distribution (set logprobsMode: 'processed_logprobs' if the server runs with --logprobs-mode processed_logprobs)",
    });
  }
  if (dialect === 'openai') {
    const unsupported: [string, number, number][] = [
      ['request.topK', request.topK, 0],
      ['request.minP', request.minP, 0],
      ['request.repetitionPenalty', request.repetitionPenalty, 1],
    ];
    for (const [parameter, value, neutral] of unsupported) {
      if (value !== neutral) {
        throw new InvalidArgumentError({
          parameter,
          functionName: FN,
          value,
          expected: `${neutral}: OpenAI's API has no such sampling parameter (use server: 'generic' for a server that takes it)`,
        });
      }
    }
  }
}

/** The seed prompt `promptIndex` of a call is requested with (prompt 0 keeps the call's seed). */
export function promptSeed(seed: number, promptIndex: number): number {
  return (seed + promptIndex * 1_000_003) % 2 ** 31;
}

/** Everything one HTTP request samples. */
export type RequestPlan = {
  promptIndex: number;
  prompt: Prompt;
  n: number;
  seed: number | undefined;
  stream: boolean;
};

/** The JSON body of one request, for the endpoint and the server family. */
export function buildBody(
  plan: RequestPlan,
  request: ResolvedRequest,
  options: ResolvedOptions,
  dialect: Dialect,
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...options.extraBody, model: options.model };
  const api: OpenAIApi = options.api;
  if (api === 'completions') {
    body.prompt = typeof plan.prompt === 'string' ? plan.prompt : [...plan.prompt];
  } else {
    if (typeof plan.prompt !== 'string') {
      throw new InvalidArgumentError({
        parameter: `request.prompts[${plan.promptIndex}]`,
        functionName: FN,
        value: plan.prompt,
        expected:
          "a text prompt: the chat API takes messages, not token ids (use api: 'completions')",
      });
    }
    body.messages = [{ role: 'user', content: plan.prompt }];
  }
  body.n = plan.n;
  if (plan.seed !== undefined) body.seed = plan.seed;
  body[api === 'chat' && dialect === 'openai' ? 'max_completion_tokens' : 'max_tokens'] =
    request.maxNewTokens;
  body.temperature = request.temperature;
  body.top_p = request.topP;
  samplingExtras(body, request, dialect);
  if (request.stop) body.stop = [...request.stop];
  if (options.logprobs) logprobFields(body, request, api, dialect);
  if (plan.stream) body.stream = true;
  return body;
}

function samplingExtras(
  body: Record<string, unknown>,
  request: ResolvedRequest,
  dialect: Dialect,
): void {
  switch (dialect) {
    case 'vllm':
    case 'sglang':
      // both take -1 for "no top-k" (vLLM also 0, but older releases refuse 0)
      body.top_k = request.topK === 0 ? -1 : request.topK;
      body.min_p = request.minP;
      body.repetition_penalty = request.repetitionPenalty;
      return;
    case 'llama-server':
      // llama-server fills omitted fields with its own defaults (top-k 40, top-p 0.95, min-p 0.05)
      body.top_k = request.topK;
      body.min_p = request.minP;
      body.repeat_penalty = request.repetitionPenalty;
      if (request.repetitionPenalty !== 1) body.repeat_last_n = -1;
      return;
    case 'openai':
      return;
    case 'generic':
      if (request.topK !== 0) body.top_k = request.topK;
      if (request.minP !== 0) body.min_p = request.minP;
      if (request.repetitionPenalty !== 1) body.repetition_penalty = request.repetitionPenalty;
      return;
  }
}

function logprobFields(
  body: Record<string, unknown>,
  request: ResolvedRequest,
  api: OpenAIApi,
  dialect: Dialect,
): void {
  // llama-server returns no per-token data at all (not even the sampled token's id) with 0 probs
  const k = dialect === 'llama-server' ? Math.max(1, request.topLogprobs) : request.topLogprobs;
  if (api === 'completions') {
    body.logprobs = k;
  } else {
    body.logprobs = true;
    // vLLM's chat endpoint lists the sampled token first and keeps the first k: one more makes
    // the top k exact (up to its default --max-logprobs 20)
    body.top_logprobs = dialect === 'vllm' && k > 0 ? Math.min(k + 1, 20) : k;
  }
  if (dialect === 'vllm') {
    // ids of the sampled token and of every top logprob ("token_id:N"), and the raw id lists
    body.return_tokens_as_token_ids = true;
    body.return_token_ids = true;
  }
}
