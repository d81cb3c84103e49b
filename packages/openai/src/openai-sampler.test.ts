import { ErrorCode, RlvrError } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedTinyModel } from './__fixtures__/tiny-model.js';
import { createOpenAISampler } from './openai-sampler.js';

type Served = Awaited<ReturnType<typeof servedTinyModel>>;

const REQUEST = { maxNewTokens: 12, temperature: 0.9, topP: 0.95, seed: 7 } as const;

describe.each([
  ['vllm', 'completions'],
  ['vllm', 'chat'],
  ['llama-server', 'completions'],
  ['llama-server', 'chat'],
] as const)('createOpenAISampler against a %s-shaped server (%s)', (dialect, api) => {
  let served: Served;
  beforeAll(async () => {
    served = await servedTinyModel({ dialect });
  });
  afterAll(() => served.close());

  /** What the backing model gives for the prompt as the server renders it. */
  async function local(prompt: string, extra: Record<string, unknown> = {}) {
    const rendered =
      api === 'chat'
        ? served.tokenizer.encode(
            served.tokenizer.applyChatTemplate([{ role: 'user', content: prompt }]),
            { addSpecialTokens: false },
          )
        : prompt;
    const [group] = await served.local.sample({
      prompts: [rendered],
      n: 4,
      ...REQUEST,
      returnModelLogprobs: true,
      ...extra,
    });
    return group!;
  }

  it('should detect the server, sample n per request and return the model’s tokens and raw logprobs', async () => {
    const sampler = createOpenAISampler({ baseURL: served.server.baseURL, model: 'tiny', api });
    const [group] = await sampler.sample({
      prompts: ['ab'],
      n: 4,
      ...REQUEST,
      returnModelLogprobs: true,
    });
    expect(sampler.server).toBe(dialect);
    expect(sampler.nStrategy).toBe('n');
    const expected = await local('ab');
    expect(group).toHaveLength(4);
    for (const [index, completion] of group!.entries()) {
      const reference = expected[index]!;
      expect(completion.text).toBe(reference.text);
      expect(completion.tokenIds).toEqual(reference.tokenIds);
      expect(completion.finishReason).toBe(reference.finishReason);
      expect(completion.behaviourLogprobs).toBe(false);
      // raw_logprobs: the model distribution at temperature 1, the local sampler's modelLogprobs
      const gap = completion.logprobs.map((lp, t) => Math.abs(lp - reference.modelLogprobs![t]!));
      expect(Math.max(0, ...gap)).toBeLessThan(1e-4);
      expect(completion.modelLogprobs).toEqual(completion.logprobs);
    }
  });

  it('should return the top logprobs of the model distribution', async () => {
    const sampler = createOpenAISampler({ baseURL: served.server.baseURL, model: 'tiny', api });
    const [group] = await sampler.sample({ prompts: ['cd'], n: 4, ...REQUEST, topLogprobs: 3 });
    const expected = await local('cd', { topLogprobs: 3 });
    for (const [index, completion] of group!.entries()) {
      const reference = expected[index]!;
      expect(completion.topLogprobs).toHaveLength(completion.tokenIds.length);
      for (const [t, row] of completion.topLogprobs!.entries()) {
        const want = reference.topLogprobs![t]!;
        expect(row.map((e) => e.tokenId)).toEqual(want.map((e) => e.tokenId));
        for (const [r, entry] of row.entries())
          expect(entry.logprob).toBeCloseTo(want[r]!.logprob, 4);
      }
    }
  });

  it('should give the same samples as one parallel request per sample would for n = 1', async () => {
    const sampler = createOpenAISampler({
      baseURL: served.server.baseURL,
      model: 'tiny',
      api,
      nStrategy: 'parallel',
    });
    const groups = await sampler.sample({ prompts: ['ab', 'ef'], n: 2, ...REQUEST });
    expect(groups).toHaveLength(2);
    const expected = await local('ab', { n: 1 });
    // sample j of prompt 0 is requested with seed + j
    expect(groups[0]![0]!.tokenIds).toEqual(expected[0]!.tokenIds);
    expect(groups.every((group) => group.length === 2)).toBe(true);
  });
});

describe('createOpenAISampler n strategy', () => {
  it('should detect a server that refuses n > 1 once and then request in parallel', async () => {
    const served = await servedTinyModel({ dialect: 'llama-server', refuseN: true });
    try {
      const sampler = createOpenAISampler({
        baseURL: served.server.baseURL,
        model: 'tiny',
        api: 'chat',
      });
      const groups = await sampler.sample({ prompts: ['ab', 'cd'], n: 3, ...REQUEST });
      expect(groups.map((group) => group.length)).toEqual([3, 3]);
      expect(sampler.nStrategy).toBe('parallel');
      await sampler.sample({ prompts: ['ab'], n: 3, ...REQUEST });
      const refused = served.server.log.filter((entry) => entry.status === 500);
      // both prompts of the first call probed before the answer came; never again afterwards
      expect(refused.length).toBeLessThanOrEqual(2);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      const generated = served.server.log.filter(
        (entry) => entry.status === 200 && entry.path.endsWith('/completions'),
      );
      expect(generated).toHaveLength(9);
      expect(generated.every((entry) => entry.body?.n === 1)).toBe(true);
    } finally {
      await served.close();
    }
  });

  it('should fall back to parallel requests for a server that ignores n, losing no sample', async () => {
    const served = await servedTinyModel({ dialect: 'vllm', ignoreN: true });
    try {
      const sampler = createOpenAISampler({
        baseURL: served.server.baseURL,
        model: 'tiny',
        api: 'completions',
      });
      const [group] = await sampler.sample({ prompts: ['ab'], n: 3, ...REQUEST });
      expect(group).toHaveLength(3);
      expect(sampler.nStrategy).toBe('parallel');
      const seeds = served.server.log.filter((e) => e.body?.n === 1).map((e) => e.body?.seed);
      expect(seeds).toEqual([7, 8, 9]);
      const strict = createOpenAISampler({
        baseURL: served.server.baseURL,
        model: 'tiny',
        api: 'completions',
        nStrategy: 'n',
      });
      await expect(strict.sample({ prompts: ['ab'], n: 3, ...REQUEST })).rejects.toMatchObject({
        fault: 'missing-choices',
      });
    } finally {
      await served.close();
    }
  });

  it("should refuse with a typed error when nStrategy is 'n' and the server refuses n", async () => {
    const served = await servedTinyModel({ dialect: 'llama-server', refuseN: true });
    try {
      const sampler = createOpenAISampler({
        baseURL: served.server.baseURL,
        model: 'tiny',
        api: 'completions',
        nStrategy: 'n',
        maxRetries: 0,
      });
      const error = await sampler
        .sample({ prompts: ['ab'], n: 2, ...REQUEST })
        .catch((e: unknown) => e);
      expect((error as { fault?: string }).fault).toBe('server-error');
      expect((error as Error).message).toMatch(/Only one completion choice is allowed/);
    } finally {
      await served.close();
    }
  });
});

describe('createOpenAISampler options', () => {
  it('should reject unknown options with the closest name and managed body fields', () => {
    const base = { baseURL: 'http://127.0.0.1:1/v1', model: 'm', api: 'chat' as const };
    expect(() => createOpenAISampler({ ...base, concurency: 2 } as never)).toThrow(
      /did you mean 'concurrency'/,
    );
    expect(() => createOpenAISampler({ ...base, base_url: 'x' } as never)).toThrow(/baseURL/);
    expect(() => createOpenAISampler({ ...base, extraBody: { seed: 1 } })).toThrow(
      /options.extraBody.seed/,
    );
    expect(() => createOpenAISampler({ ...base, api: 'responses' as never })).toThrow(
      /options.api/,
    );
    expect(() =>
      createOpenAISampler({ ...base, logprobs: false, behaviourLogprobs: true }),
    ).toThrow(expect.objectContaining({ code: ErrorCode.INEFFECTIVE_OPTION }));
  });

  it('should refuse vouched behaviour logprobs for a raw_logprobs server at a non-neutral temperature', async () => {
    const sampler = createOpenAISampler({
      baseURL: 'http://127.0.0.1:1/v1',
      model: 'm',
      api: 'completions',
      server: 'vllm',
      behaviourLogprobs: true,
    });
    const error = await sampler
      .sample({ prompts: ['a'], n: 1, maxNewTokens: 2, temperature: 0.7 })
      .catch((e: unknown) => e);
    expect(RlvrError.isInstance(error) && error.message).toMatch(/request.temperature/);
  });

  it("should refuse top-k on OpenAI's own API and token-id prompts on the chat API", async () => {
    const openai = createOpenAISampler({
      baseURL: 'http://127.0.0.1:1/v1',
      model: 'm',
      api: 'chat',
      server: 'openai',
    });
    await expect(openai.sample({ prompts: ['a'], n: 1, maxNewTokens: 2, topK: 5 })).rejects.toThrow(
      /request.topK/,
    );
    const chat = createOpenAISampler({
      baseURL: 'http://127.0.0.1:1/v1',
      model: 'm',
      api: 'chat',
      server: 'vllm',
      maxRetries: 0,
    });
    await expect(chat.sample({ prompts: [[1, 2]], n: 1, maxNewTokens: 2 })).rejects.toThrow(
      /request.prompts\[0\]/,
    );
    await expect(
      chat.sample({ prompts: ['a'], n: 1, maxNewTokens: 2, topk: 3 } as never),
    ).rejects.toThrow(/did you mean 'topK'/);
  });
});
