import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbortedError, createRng } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedTinyModel } from './__fixtures__/tiny-model.js';
import { ServedModelError } from './errors/served-model-error.js';
import { createOpenAISampler } from './openai-sampler.js';
import type { ServerFault } from './testing/openai-compatible-server.js';

const REQUEST = { maxNewTokens: 8, temperature: 1, seed: 11 } as const;

async function faultOf(promise: Promise<unknown>): Promise<ServedModelError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ServedModelError.isInstance(error)).toBe(true);
  return error as ServedModelError;
}

describe('createOpenAISampler faults (vLLM-shaped server)', () => {
  let faults: (ServerFault | undefined)[] = [];
  let served: Awaited<ReturnType<typeof servedTinyModel>>;
  let reference: unknown;
  beforeAll(async () => {
    served = await servedTinyModel({
      dialect: 'vllm',
      apiKey: 'secret',
      maxModelLen: 64,
      fault: ({ index }) => faults[index],
    });
    const clean = createOpenAISampler({
      baseURL: served.server.baseURL,
      model: 'tiny',
      api: 'completions',
      apiKey: 'secret',
    });
    reference = await clean.sample({ prompts: ['ab', 'cd'], n: 3, ...REQUEST });
  });
  afterAll(() => served.close());

  /** A sampler for one test, with faults indexed from the next generation request. */
  function sampler(plan: (ServerFault | undefined)[], options: Record<string, unknown> = {}) {
    const start = served.server.log.filter((entry) => entry.body !== undefined).length;
    faults = [...Array.from({ length: start }, (): ServerFault | undefined => undefined), ...plan];
    return createOpenAISampler({
      baseURL: served.server.baseURL,
      model: 'tiny',
      api: 'completions',
      apiKey: 'secret',
      server: 'vllm',
      concurrency: 1,
      ...options,
    });
  }

  it('should retry a 429 honouring Retry-After and a 500 once, with the same samples', async () => {
    const s = sampler([{ type: 'rate-limit', retryAfterSeconds: 0.2 }, { type: 'server-error' }]);
    const started = performance.now();
    const groups = await s.sample({ prompts: ['ab', 'cd'], n: 3, ...REQUEST });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(groups).toEqual(reference);
    expect(s.stats).toEqual({ attempts: 4, failedAttempts: 2 });
  });

  it('should back off with jitter when a 429 has no Retry-After', async () => {
    const s = sampler([{ type: 'rate-limit', retryAfterSeconds: null }]);
    const started = performance.now();
    const groups = await s.sample({ prompts: ['ab', 'cd'], n: 3, ...REQUEST });
    // the openai client's first backoff: 0.5 s × (1 − up to 25% jitter)
    expect(performance.now() - started).toBeGreaterThanOrEqual(370);
    expect(groups).toEqual(reference);
  });

  it('should end a slow response past the timeout in a typed timeout after its retries', async () => {
    const s = sampler(
      [
        { type: 'delay', ms: 400 },
        { type: 'delay', ms: 400 },
      ],
      { timeoutMs: 100, maxRetries: 1 },
    );
    const error = await faultOf(s.sample({ prompts: ['ab'], n: 2, ...REQUEST }));
    expect(error.fault).toBe('timeout');
    expect(error.code).toBe('TIMEOUT');
    expect(error.request).toMatchObject({ promptIndex: 0, sampleIndices: [0, 1], seed: 11 });
    expect(error.message).toMatch(/POST \/completions/);
  });

  it('should retry a slow response once and then succeed', async () => {
    const s = sampler([{ type: 'delay', ms: 400 }], { timeoutMs: 150, maxRetries: 2 });
    const groups = await s.sample({ prompts: ['ab', 'cd'], n: 3, ...REQUEST });
    expect(groups).toEqual(reference);
  });

  it.each([
    [{ type: 'malformed-json' } as const, 'malformed-response'],
    [{ type: 'fewer-choices' } as const, 'missing-choices'],
    [{ type: 'cut-stream', afterChunks: 0 } as const, 'malformed-response'],
  ])('should turn %o into a typed %s error naming the request', async (fault, expected) => {
    const s = sampler([fault], { maxRetries: 0 });
    // n 3: two choices for three is an error even for a first request (one would mean "n ignored")
    const error = await faultOf(s.sample({ prompts: ['ab'], n: 3, ...REQUEST }));
    expect([expected, 'unreachable']).toContain(error.fault);
    if (fault.type !== 'cut-stream') expect(error.fault).toBe(expected);
    expect(error.request.promptIndex).toBe(0);
  });

  it('should cut a streamed response into a typed stream-cut error, never a partial group', async () => {
    const s = sampler([{ type: 'cut-stream', afterChunks: 3 }], { maxRetries: 0 });
    const error = await faultOf(
      s.sample({
        prompts: ['ab'],
        n: 1,
        ...REQUEST,
        topLogprobs: 2,
        confidenceStop: { windowSize: 2, threshold: 1e-9 },
      }),
    );
    expect(error.fault).toBe('stream-cut');
    expect(error.request).toMatchObject({ promptIndex: 0, sampleIndices: [0] });
  });

  it('should name 401, 404 and context overflow', async () => {
    const base = {
      baseURL: served.server.baseURL,
      api: 'completions' as const,
      server: 'vllm' as const,
    };
    const unauthorized = await faultOf(
      createOpenAISampler({ ...base, model: 'tiny', apiKey: 'wrong' }).sample({
        prompts: ['ab'],
        n: 1,
        ...REQUEST,
      }),
    );
    expect(unauthorized).toMatchObject({ fault: 'unauthorized', status: 401 });
    const missing = await faultOf(
      createOpenAISampler({ ...base, model: 'nope', apiKey: 'secret' }).sample({
        prompts: ['ab'],
        n: 1,
        ...REQUEST,
      }),
    );
    expect(missing).toMatchObject({
      fault: 'model-not-found',
      status: 404,
      code: 'MODEL_LOAD_FAILED',
    });
    expect(missing.serverMessage).toMatch(/does not exist/);
    const overflow = await faultOf(
      sampler([]).sample({ prompts: ['ab'], n: 1, ...REQUEST, maxNewTokens: 100 }),
    );
    expect(overflow).toMatchObject({ fault: 'context-overflow', status: 400 });
    expect(overflow.serverMessage).toMatch(/maximum context length is 64 tokens/);
  });

  it.each(['parallel', 'n'] as const)(
    'should lose and duplicate no sample under a 429 storm (counted, %s)',
    async (nStrategy) => {
      const rng = createRng(5);
      // 60% of requests answered 429 with a short Retry-After
      const plan = Array.from({ length: 400 }, () =>
        rng.next() < 0.6 ? ({ type: 'rate-limit', retryAfterSeconds: 0.01 } as const) : undefined,
      );
      const s = sampler(plan, { concurrency: 4, maxRetries: 30, nStrategy });
      const start = served.server.log.length;
      const prompts = ['ab', 'cd', 'ef', 'gh', 'a1', 'b2'];
      const groups = await s.sample({ prompts, n: 4, ...REQUEST });
      const clean = await sampler([], { nStrategy }).sample({
        prompts,
        n: 4,
        ...REQUEST,
      });
      expect(groups).toEqual(clean);
      const answered = served.server.log
        .slice(start)
        .filter((entry) => entry.status === 200 && entry.body !== undefined);
      const limited = served.server.log.slice(start).filter((entry) => entry.status === 429);
      // the storm happened, and every request was answered exactly once (24 samples in the call)
      const requests = nStrategy === 'parallel' ? 24 : 6;
      expect(limited.length).toBeGreaterThan(nStrategy === 'parallel' ? 10 : 3);
      const seeds = answered.slice(0, requests).map((entry) => entry.body!.seed);
      expect(new Set(seeds).size).toBe(requests);
      expect(answered.slice(0, requests).reduce((sum, entry) => sum + entry.choicesServed, 0)).toBe(
        24,
      );
      expect(groups.flat()).toHaveLength(24);
    },
    120_000,
  );

  it('should cancel in-flight requests on abort and reject with AbortedError', async () => {
    const s = sampler(
      Array.from({ length: 4 }, () => ({ type: 'delay', ms: 2000 }) as const),
      { concurrency: 4, nStrategy: 'parallel' },
    );
    const controller = new AbortController();
    const start = served.server.log.length;
    setTimeout(() => controller.abort(new Error('stop')), 100);
    const started = performance.now();
    const error = await s
      .sample({ prompts: ['ab'], n: 4, ...REQUEST }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1500);
    // the server saw the requests and none was answered
    const seen = served.server.log.slice(start);
    expect(seen.length).toBe(4);
    expect(seen.every((entry) => entry.choicesServed === 0)).toBe(true);
  });
});

describe('createOpenAISampler unreachable server', () => {
  it('should fail with a typed unreachable error after its retries', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const sampler = createOpenAISampler({
      baseURL: `http://127.0.0.1:${port}/v1`,
      model: 'tiny',
      api: 'chat',
      maxRetries: 1,
    });
    const error = await faultOf(sampler.sample({ prompts: ['ab'], n: 1, ...REQUEST }));
    expect(error.fault).toBe('unreachable');
    expect(error.code).toBe('UNAVAILABLE');
  });
});
