import { AbortedError } from '@rlvr/core';
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai';
import {
  ServedModelError,
  type ServedModelFault,
  type ServedRequest,
} from './errors/served-model-error.js';
import type { ResolvedOptions } from './options.js';

/** HTTP attempts this sampler made (each retry of the `openai` client counts). */
export type TransportStats = { attempts: number; failedAttempts: number };

/** The official client, with a `fetch` that counts attempts (the client's retries are internal). */
export function createClient(options: ResolvedOptions, stats: TransportStats): OpenAI {
  const countingFetch: typeof fetch = async (input, init) => {
    stats.attempts += 1;
    try {
      const response = await fetch(input, init);
      if (!response.ok) stats.failedAttempts += 1;
      return response;
    } catch (error) {
      stats.failedAttempts += 1;
      throw error;
    }
  };
  return new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    maxRetries: options.maxRetries,
    timeout: options.timeoutMs,
    defaultHeaders: options.headers,
    fetch: countingFetch,
  });
}

const CONTEXT_OVERFLOW =
  /context length|context size|context window|maximum context|max_model_len|too many tokens|prompt is too long|exceeds? the (available )?context|context_length_exceeded|exceed_context_size/i;

/** Messages of servers that refuse `n` > 1 (llama-server before Dec 2025, and similar). */
const N_REFUSED =
  /only one completion choice|\bn\b[^.]{0,40}\b(must be|should be|only supports?) 1\b|n\s*>\s*1[^.]{0,40}not supported|multiple (choices|completions)[^.]{0,20}not supported/i;

/** The server's own message of an API error (`{ error: { message } }`, `{ message }` or a string). */
export function serverMessageOf(error: APIError): string | undefined {
  const body = error.error as unknown;
  if (typeof body === 'string') return body;
  if (body && typeof body === 'object') {
    const message = (body as { message?: unknown }).message;
    if (typeof message === 'string') return message;
    const nested = (body as { error?: unknown }).error;
    if (typeof nested === 'string') return nested;
  }
  return undefined;
}

/** True when the error is a server refusing `n` > 1. */
export function isNRefusal(error: unknown): boolean {
  if (!(error instanceof APIError) || error.status === undefined) return false;
  if (error.status !== 400 && error.status !== 422 && error.status < 500) return false;
  return N_REFUSED.test(serverMessageOf(error) ?? error.message);
}

/** True for errors the client retries (429, 5xx, timeouts, no connection). */
export function isRetryable(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof APIError && error.status !== undefined) {
    return (
      error.status === 408 || error.status === 409 || error.status === 429 || error.status >= 500
    );
  }
  return false;
}

/**
 * How long the `openai` client waits before its first retry of `error`: `retry-after-ms` /
 * `retry-after` (seconds or an HTTP date, when under a minute), else 0.5 s less up to 25% jitter.
 */
export function retryDelayMs(error: unknown): number {
  const headers = error instanceof APIError ? error.headers : undefined;
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0 && ms < 60_000) return ms;
  const after = headers?.get('retry-after');
  if (after) {
    const seconds = Number.parseFloat(after);
    const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - Date.now();
    if (Number.isFinite(wait) && wait >= 0 && wait < 60_000) return wait;
  }
  return 500 * (1 - Math.random() * 0.25);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

/**
 * The typed error for a failed request (or {@link AbortedError} when `signal` aborted it).
 * `fallback` is the fault for anything that is not an HTTP / transport error.
 */
export function toServedError(
  error: unknown,
  request: ServedRequest,
  signal: AbortSignal | undefined,
  operation: string,
  fallback: { fault: ServedModelFault; message: string } = {
    fault: 'malformed-response',
    message: 'the response could not be read',
  },
): Error {
  if (ServedModelError.isInstance(error) || AbortedError.isInstance(error)) return error;
  if (signal?.aborted) return new AbortedError({ operation, cause: signal.reason });
  const make = (
    fault: ServedModelFault,
    message: string,
    extra: { status?: number; serverMessage?: string } = {},
  ) => new ServedModelError({ fault, request, message, cause: error, ...extra });
  if (error instanceof APIUserAbortError) {
    return make('unreachable', 'the request was cancelled by the transport');
  }
  if (error instanceof APIConnectionTimeoutError) {
    return make('timeout', 'no response within timeoutMs on every attempt');
  }
  if (error instanceof APIConnectionError) {
    return make(
      'unreachable',
      `cannot connect (${(error.cause as Error | undefined)?.message ?? error.message})`,
    );
  }
  if (error instanceof APIError && error.status !== undefined) {
    const status = error.status;
    const serverMessage = serverMessageOf(error) ?? error.message;
    const id = error.requestID ?? undefined;
    const withId = id ? { ...request, requestId: id } : request;
    const typed = (fault: ServedModelFault, message: string) =>
      new ServedModelError({
        fault,
        request: withId,
        message,
        status,
        serverMessage,
        cause: error,
      });
    if (status === 401 || status === 403)
      return typed('unauthorized', 'the server refused the API key');
    if (status === 404)
      return typed('model-not-found', 'the server does not serve this model or endpoint');
    if (status === 429) return typed('rate-limited', 'rate limited on every attempt');
    if (status >= 500) return typed('server-error', 'the server failed on every attempt');
    if (CONTEXT_OVERFLOW.test(serverMessage)) {
      return typed('context-overflow', 'the prompt plus maxNewTokens exceed the model context');
    }
    return typed('bad-request', 'the server refused the request');
  }
  if (error instanceof SyntaxError) {
    return make('malformed-response', 'the body is not valid JSON');
  }
  return make(
    fallback.fault,
    `${fallback.message} (${(error as Error)?.message ?? String(error)})`,
  );
}
