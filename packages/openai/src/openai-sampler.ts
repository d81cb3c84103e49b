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
import type { ServedRequest } from './errors/served-model-error.js';
import { Limiter } from './limiter.js';
import {
  type NStrategy,
  type OpenAISamplerOptions,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { checkRequestAgainst, type Dialect, resolveRequest } from './request.js';
import { OPERATION, type SamplerContext, samplePrompt } from './requests.js';
import { createClient, type TransportStats, toServedError } from './transport.js';

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

/** How long `server: 'auto'` waits for `GET /models` per attempt. */
const DETECT_TIMEOUT_MS = 10_000;

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
  let dialect: Dialect | undefined = resolved.server === 'auto' ? undefined : resolved.server;
  let detecting: Promise<Dialect> | undefined;
  const context: SamplerContext = {
    client,
    resolved,
    limiter: new Limiter(resolved.concurrency),
    endpoint: resolved.api === 'chat' ? 'POST /chat/completions' : 'POST /completions',
    state: { nStrategy: resolved.nStrategy },
  };

  async function detect(signal: AbortSignal | undefined): Promise<Dialect> {
    if (dialect !== undefined) return dialect;
    detecting ??= (async () => {
      const request: ServedRequest = { endpoint: 'GET /models', model: resolved.model };
      try {
        // a short look: a server that does not answer /models quickly is treated as generic
        const page = await client.models.list({
          signal,
          timeout: Math.min(resolved.timeoutMs, DETECT_TIMEOUT_MS),
          maxRetries: Math.min(resolved.maxRetries, 1),
        });
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

  return {
    specificationVersion: 'v1',
    modelId: resolved.modelId,
    get server() {
      return dialect;
    },
    get nStrategy() {
      return context.state.nStrategy;
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
          samplePrompt(context, promptIndex, request, use, signal).catch((error: unknown) => {
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

export type { OpenAISamplerOptions, ResolvedOptions };
