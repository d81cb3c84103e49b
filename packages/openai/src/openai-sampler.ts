import { setMaxListeners } from 'node:events';
import {
  AbortedError,
  type Completion,
  InvalidArgumentError,
  type SampleRequest,
  type Sampler,
  throwIfAborted,
  validateOptions,
} from '@rlvr/core';
import { APIConnectionError, APIError } from 'openai';
import { NoTokenIdsError, toCompletion } from './completion.js';
import { ServedModelError, type ServedRequest } from './errors/served-model-error.js';
import { Limiter } from './limiter.js';
import {
  type NStrategy,
  type OpenAISamplerOptions,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { parseResponse, ShapeError } from './parse.js';
import {
  buildBody,
  checkRequestAgainst,
  type Dialect,
  promptSeed,
  type RequestPlan,
  type ResolvedRequest,
  resolveRequest,
} from './request.js';
import { readStream } from './stream.js';
import {
  createClient,
  isNRefusal,
  isRetryable,
  retryDelayMs,
  sleep,
  type TransportStats,
  toServedError,
} from './transport.js';

/** core's `Sampler` over an OpenAI-compatible server, plus what it learnt about the server. */
export interface OpenAISampler extends Sampler {
  readonly specificationVersion: 'v1';
  readonly modelId: string;
  /** The server family in use: the `server` option, or what `'auto'` detected (undefined before the first call). */
  readonly server: Dialect | undefined;
  /** How samples are requested now: `'auto'` until the server accepted or refused `n` > 1. */
  readonly nStrategy: NStrategy;
  /** HTTP attempts so far (each retry counts) and how many failed. */
  readonly stats: Readonly<TransportStats>;
  /** Forgets nothing and holds no connection: kept for core's `Sampler` shape. */
  close(): Promise<void>;
}

const OPERATION = 'OpenAISampler.sample()';

/** `owned_by` of `GET /models` → the server family. */
function dialectOf(ownedBy: unknown): Dialect {
  switch (ownedBy) {
    case 'vllm':
      return 'vllm';
    case 'sglang':
      return 'sglang';
    case 'llamacpp':
    case 'llama.cpp':
      return 'llama-server';
    case 'openai':
    case 'system':
    case 'openai-internal':
      return 'openai';
    default:
      return 'generic';
  }
}

/**
 * Creates core's `Sampler` over any OpenAI-compatible server (vLLM, SGLang, llama.cpp's
 * `llama-server`, Ollama, LM Studio, hosted APIs), through the official `openai` client.
 *
 * @example
 * ```ts
 * const sampler = createOpenAISampler({ baseURL: 'http://127.0.0.1:8000/v1', model: 'Qwen/Qwen3-0.6B', api: 'chat' });
 * const [group] = await sampler.sample({ prompts: ['What is 17 * 3?'], n: 8, maxNewTokens: 512, temperature: 0.6, seed: 0 });
 * ```
 * @throws {InvalidArgumentError} for a bad option (`UNKNOWN_OPTION` with the closest name).
 */
export function createOpenAISampler(options: OpenAISamplerOptions): OpenAISampler {
  const resolved = resolveOptions(options);
  const stats: TransportStats = { attempts: 0, failedAttempts: 0 };
  const client = createClient(resolved, stats);
  const limiter = new Limiter(resolved.concurrency);
  let dialect: Dialect | undefined = resolved.server === 'auto' ? undefined : resolved.server;
  let detecting: Promise<Dialect> | undefined;
  let nStrategy: NStrategy = resolved.nStrategy;
  const endpoint = resolved.api === 'chat' ? 'POST /chat/completions' : 'POST /completions';

  async function detect(signal: AbortSignal | undefined): Promise<Dialect> {
    if (dialect !== undefined) return dialect;
    detecting ??= (async () => {
      const request: ServedRequest = { endpoint: 'GET /models', model: resolved.model };
      try {
        const page = await client.models.list({ signal });
        const models =
          (page as unknown as { data?: { id?: unknown; owned_by?: unknown }[] }).data ?? [];
        const entry = models.find((model) => model.id === resolved.model) ?? models[0];
        return dialectOf(entry?.owned_by);
      } catch (error) {
        // an unreachable server or a refused key fails here; a server without /models is generic
        if (error instanceof APIConnectionError)
          throw toServedError(error, request, signal, OPERATION);
        if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
          throw toServedError(error, request, signal, OPERATION);
        }
        if (signal?.aborted) throw new AbortedError({ operation: OPERATION, cause: signal.reason });
        return 'generic' as const;
      }
    })();
    try {
      dialect = await detecting;
      return dialect;
    } finally {
      detecting = undefined;
    }
  }

  function describe(plan: RequestPlan, sampleIndices: number[]): ServedRequest {
    return {
      endpoint,
      model: resolved.model,
      promptIndex: plan.promptIndex,
      sampleIndices,
      ...(plan.seed === undefined ? {} : { seed: plan.seed }),
    };
  }

  /** One non-streamed request; resolves with its n completions in choice order. */
  async function requestOnce(
    plan: RequestPlan,
    sampleIndices: number[],
    request: ResolvedRequest,
    use: Dialect,
    signal: AbortSignal,
    maxRetries: number,
    probing = false,
  ): Promise<Completion[]> {
    const body = buildBody(plan, request, resolved, use);
    const served = describe(plan, sampleIndices);
    const create = (resolved.api === 'chat'
      ? client.chat.completions.create.bind(client.chat.completions)
      : client.completions.create.bind(client.completions)) as unknown as (
      body: unknown,
      options: unknown,
    ) => Promise<unknown>;
    let response: unknown;
    try {
      response = await create(body, { signal, maxRetries });
    } catch (error) {
      if (isNRefusal(error) && plan.n > 1) throw new NRefused(error);
      throw toServedError(error, served, signal, OPERATION);
    }
    throwIfAborted(signal, OPERATION);
    const requestId = (response as { _request_id?: string | null })?._request_id ?? undefined;
    const named = requestId ? { ...served, requestId } : served;
    try {
      const { choices } = parseResponse(response);
      const byIndex = new Map(choices.map((choice) => [choice.index, choice]));
      if (probing && plan.n > 1 && choices.length === 1) {
        // a server that ignores n (Ollama, some llama.cpp builds): the probe's one sample is
        // dropped and asked again in parallel with the same seed
        throw new NRefused(new Error(`the server answered n = ${plan.n} with one choice`));
      }
      if (choices.length !== plan.n || byIndex.size !== plan.n) {
        throw new ServedModelError({
          fault: 'missing-choices',
          request: named,
          message: `asked for n = ${plan.n} choices, got ${choices.length} (indices ${[...byIndex.keys()].join(', ') || 'none'})`,
        });
      }
      return sampleIndices.map((_, position) => {
        const choice = byIndex.get(position);
        if (!choice) {
          throw new ServedModelError({
            fault: 'missing-choices',
            request: named,
            message: `choice index ${position} is missing`,
          });
        }
        return toCompletion(choice, request, resolved);
      });
    } catch (error) {
      throw shapeFault(error, named);
    }
  }

  /** One streamed request of one sample (closable on its own: the confidence stop). */
  async function streamOnce(
    plan: RequestPlan,
    sampleIndex: number,
    request: ResolvedRequest,
    use: Dialect,
    signal: AbortSignal,
  ): Promise<Completion> {
    const body = buildBody(plan, request, resolved, use);
    const served = describe(plan, [sampleIndex]);
    const create = (resolved.api === 'chat'
      ? client.chat.completions.create.bind(client.chat.completions)
      : client.completions.create.bind(client.completions)) as unknown as (
      body: unknown,
      options: unknown,
    ) => Promise<AsyncIterable<unknown>>;
    let streamed: Awaited<ReturnType<typeof readStream>>;
    try {
      const stream = await create(body, { signal });
      const confidence = request.confidenceStop
        ? { stop: request.confidenceStop, k: request.topLogprobs }
        : undefined;
      streamed = await readStream(stream, confidence);
    } catch (error) {
      if (error instanceof ShapeError || error instanceof NoTokenIdsError)
        throw shapeFault(error, served);
      throw toServedError(error, served, signal, OPERATION, {
        fault: 'stream-cut',
        message: 'the stream broke before the completion finished',
      });
    }
    throwIfAborted(signal, OPERATION);
    if (streamed.finishReason === undefined) {
      throw new ServedModelError({
        fault: 'stream-cut',
        request: served,
        message: `the stream ended after ${streamed.chunks} chunks without a finish reason`,
      });
    }
    try {
      return toCompletion({ ...streamed, finishReason: streamed.finishReason }, request, resolved);
    } catch (error) {
      throw shapeFault(error, served);
    }
  }

  /** Every sample of one prompt, as the current n strategy says. */
  async function samplePrompt(
    promptIndex: number,
    request: ResolvedRequest,
    use: Dialect,
    signal: AbortSignal,
  ): Promise<Completion[]> {
    const prompt = request.prompts[promptIndex]!;
    const seed = request.seed === undefined ? undefined : promptSeed(request.seed, promptIndex);
    const all = Array.from({ length: request.n }, (_, index) => index);
    const parallel = (stream: boolean) =>
      Promise.all(
        all.map((sampleIndex) =>
          limiter.run(() => {
            const plan: RequestPlan = {
              promptIndex,
              prompt,
              n: 1,
              seed: seed === undefined ? undefined : seed + sampleIndex,
              stream,
            };
            return stream
              ? streamOnce(plan, sampleIndex, request, use, signal)
              : requestOnce(plan, [sampleIndex], request, use, signal, resolved.maxRetries).then(
                  (completions) => completions[0]!,
                );
          }, signal),
        ),
      );
    if (request.confidenceStop !== undefined) return parallel(true);
    if (request.n === 1 || nStrategy === 'parallel') return parallel(false);
    const plan: RequestPlan = { promptIndex, prompt, n: request.n, seed, stream: false };
    try {
      // until the server is known to take n > 1, probe without the client's retries (an old
      // llama-server answers the refusal with HTTP 500, which the client would retry)
      const probing = nStrategy === 'auto';
      const completions = await limiter.run(async () => {
        try {
          return await requestOnce(
            plan,
            all,
            request,
            use,
            signal,
            probing ? 0 : resolved.maxRetries,
            probing,
          );
        } catch (error) {
          const retry =
            probing &&
            resolved.maxRetries > 0 &&
            ServedModelError.isInstance(error) &&
            isRetryable(error.cause);
          if (!retry) throw error;
          // the probe was the first attempt: wait as the client would, then its remaining retries
          await sleep(retryDelayMs((error as ServedModelError).cause), signal);
          return requestOnce(plan, all, request, use, signal, resolved.maxRetries - 1, true);
        }
      }, signal);
      if (nStrategy === 'auto') nStrategy = 'n';
      return completions;
    } catch (error) {
      if (!(error instanceof NRefused) || resolved.nStrategy === 'n') {
        throw error instanceof NRefused
          ? toServedError(error.cause, describe(plan, all), signal, OPERATION)
          : error;
      }
      nStrategy = 'parallel';
      return parallel(false);
    }
  }

  return {
    specificationVersion: 'v1',
    modelId: resolved.modelId,
    get server() {
      return dialect;
    },
    get nStrategy() {
      return nStrategy;
    },
    stats,
    async sample(input: SampleRequest, callOptions?: { signal?: AbortSignal }) {
      const call = validateOptions<{ signal?: AbortSignal }>(callOptions, {
        parameter: 'options',
        functionName: 'OpenAISampler.sample',
        known: ['signal'],
      });
      if (call.signal !== undefined && !(call.signal instanceof AbortSignal)) {
        throw new InvalidArgumentError({
          parameter: 'options.signal',
          functionName: 'OpenAISampler.sample',
          value: call.signal,
          expected: 'an AbortSignal',
        });
      }
      const request = resolveRequest(input);
      throwIfAborted(call.signal, OPERATION);
      const use = await detect(call.signal);
      checkRequestAgainst(request, resolved, use);
      // one failure cancels the call's other requests; the caller's signal cancels them all
      const failFast = new AbortController();
      const signal = call.signal
        ? AbortSignal.any([call.signal, failFast.signal])
        : failFast.signal;
      // every request of the call listens to it (one listener each)
      setMaxListeners(0, signal);
      const settled = await Promise.allSettled(
        request.prompts.map((_, promptIndex) =>
          samplePrompt(promptIndex, request, use, signal).catch((error: unknown) => {
            failFast.abort(error);
            throw error;
          }),
        ),
      );
      throwIfAborted(call.signal, OPERATION);
      const failure = settled.find((result) => result.status === 'rejected');
      if (failure) {
        // the first failure, not the cancellations it caused
        throw failFast.signal.reason ?? (failure as PromiseRejectedResult).reason;
      }
      return settled.map((result) => {
        const group = (result as PromiseFulfilledResult<Completion[]>).value;
        if (group.length !== request.n) {
          throw new Error(`internal: ${group.length} completions for n = ${request.n}`);
        }
        return group;
      });
    },
    async close() {},
  };
}

/** A server refused `n` > 1 (the sampler switches to parallel requests). */
class NRefused extends Error {
  constructor(override readonly cause: unknown) {
    super('the server refused n > 1');
  }
}

function shapeFault(error: unknown, request: ServedRequest): unknown {
  if (error instanceof NoTokenIdsError) {
    return new ServedModelError({
      fault: 'no-token-ids',
      request,
      message: `${error.message}; per-token data (topLogprobs, confidenceStop, returnModelLogprobs) needs them (vLLM: server 'vllm' sends return_tokens_as_token_ids; llama-server returns them)`,
    });
  }
  if (error instanceof ShapeError) {
    return new ServedModelError({
      fault: 'malformed-response',
      request,
      message: error.message,
      cause: error,
    });
  }
  return error;
}

export type { OpenAISamplerOptions, ResolvedOptions };
