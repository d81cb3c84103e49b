import type { Completion } from '@rlvr/core';
import { throwIfAborted } from '@rlvr/core';
import type OpenAI from 'openai';
import { NoTokenIdsError, toCompletion } from './completion.js';
import { ServedModelError, type ServedRequest } from './errors/served-model-error.js';
import type { Limiter } from './limiter.js';
import type { NStrategy, ResolvedOptions } from './options.js';
import { parseResponse, ShapeError } from './parse.js';
import {
  buildBody,
  type Dialect,
  promptSeed,
  type RequestPlan,
  type ResolvedRequest,
} from './request.js';
import { readStream } from './stream.js';
import { isNRefusal, isRetryable, retryDelayMs, sleep, toServedError } from './transport.js';

/** What the requests of one sampler share. @internal */
export type SamplerContext = {
  client: OpenAI;
  resolved: ResolvedOptions;
  limiter: Limiter;
  endpoint: string;
  /** How samples are requested now (`'auto'` until the server showed whether it takes `n`). */
  state: { nStrategy: NStrategy };
};

export const OPERATION = 'OpenAISampler.sample()';

export function describe(
  ctx: SamplerContext,
  plan: RequestPlan,
  sampleIndices: number[],
): ServedRequest {
  return {
    endpoint: ctx.endpoint,
    model: ctx.resolved.model,
    promptIndex: plan.promptIndex,
    sampleIndices,
    ...(plan.seed === undefined ? {} : { seed: plan.seed }),
  };
}

/** One non-streamed request; resolves with its n completions in choice order. */
async function requestOnce(
  ctx: SamplerContext,
  plan: RequestPlan,
  sampleIndices: number[],
  request: ResolvedRequest,
  use: Dialect,
  signal: AbortSignal,
  maxRetries: number,
  probing = false,
): Promise<Completion[]> {
  const body = buildBody(plan, request, ctx.resolved, use);
  const served = describe(ctx, plan, sampleIndices);
  const create = (ctx.resolved.api === 'chat'
    ? ctx.client.chat.completions.create.bind(ctx.client.chat.completions)
    : ctx.client.completions.create.bind(ctx.client.completions)) as unknown as (
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
      return toCompletion(choice, request, ctx.resolved);
    });
  } catch (error) {
    throw shapeFault(error, named);
  }
}

/** One streamed request of one sample (closable on its own: the confidence stop). */
async function streamOnce(
  ctx: SamplerContext,
  plan: RequestPlan,
  sampleIndex: number,
  request: ResolvedRequest,
  use: Dialect,
  signal: AbortSignal,
): Promise<Completion> {
  const body = buildBody(plan, request, ctx.resolved, use);
  const served = describe(ctx, plan, [sampleIndex]);
  const create = (ctx.resolved.api === 'chat'
    ? ctx.client.chat.completions.create.bind(ctx.client.chat.completions)
    : ctx.client.completions.create.bind(ctx.client.completions)) as unknown as (
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
    return toCompletion(
      { ...streamed, finishReason: streamed.finishReason },
      request,
      ctx.resolved,
    );
  } catch (error) {
    throw shapeFault(error, served);
  }
}

/** Every sample of one prompt, as the current n strategy says. */
export async function samplePrompt(
  ctx: SamplerContext,
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
        ctx.limiter.run(() => {
          const plan: RequestPlan = {
            promptIndex,
            prompt,
            n: 1,
            seed: seed === undefined ? undefined : seed + sampleIndex,
            stream,
          };
          return stream
            ? streamOnce(ctx, plan, sampleIndex, request, use, signal)
            : requestOnce(
                ctx,
                plan,
                [sampleIndex],
                request,
                use,
                signal,
                ctx.resolved.maxRetries,
              ).then((completions) => completions[0]!);
        }, signal),
      ),
    );
  if (request.confidenceStop !== undefined) return parallel(true);
  if (request.n === 1 || ctx.state.nStrategy === 'parallel') return parallel(false);
  const plan: RequestPlan = { promptIndex, prompt, n: request.n, seed, stream: false };
  try {
    // until the server is known to take n > 1, probe without the client's retries (an old
    // llama-server answers the refusal with HTTP 500, which the client would retry)
    const probing = ctx.state.nStrategy === 'auto';
    const completions = await ctx.limiter.run(async () => {
      try {
        return await requestOnce(
          ctx,
          plan,
          all,
          request,
          use,
          signal,
          probing ? 0 : ctx.resolved.maxRetries,
          probing,
        );
      } catch (error) {
        const retry =
          probing &&
          ctx.resolved.maxRetries > 0 &&
          ServedModelError.isInstance(error) &&
          isRetryable(error.cause);
        if (!retry) throw error;
        // the probe was the first attempt: wait as the client would, then its remaining retries
        await sleep(retryDelayMs((error as ServedModelError).cause), signal);
        return requestOnce(ctx, plan, all, request, use, signal, ctx.resolved.maxRetries - 1, true);
      }
    }, signal);
    if (ctx.state.nStrategy === 'auto') ctx.state.nStrategy = 'n';
    return completions;
  } catch (error) {
    if (!(error instanceof NRefused) || ctx.resolved.nStrategy === 'n') {
      throw error instanceof NRefused
        ? toServedError(error.cause, describe(ctx, plan, all), signal, OPERATION)
        : error;
    }
    ctx.state.nStrategy = 'parallel';
    return parallel(false);
  }
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
