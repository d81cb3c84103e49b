import { AbortedError, type Completion } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedTinyModel } from './__fixtures__/tiny-model.js';
import { createOpenAISampler } from './openai-sampler.js';

describe.each([
  ['vllm', 'completions'],
  ['llama-server', 'chat'],
  ['vllm', 'chat'],
] as const)('confidenceStop through a streamed %s response (%s)', (dialect, api) => {
  let served: Awaited<ReturnType<typeof servedTinyModel>>;
  let slow = false;
  beforeAll(async () => {
    served = await servedTinyModel({
      dialect,
      fault: () => (slow ? { type: 'slow-stream', msPerChunk: 20 } : undefined),
    });
  });
  afterAll(() => served.close());

  const prompt = (text: string) =>
    api === 'chat'
      ? served.tokenizer.encode(
          served.tokenizer.applyChatTemplate([{ role: 'user', content: text }]),
          {
            addSpecialTokens: false,
          },
        )
      : text;

  it('should stop at the same token as the local sampler and close the stream', async () => {
    const sampler = createOpenAISampler({ baseURL: served.server.baseURL, model: 'tiny', api });
    const request = { n: 1, maxNewTokens: 40, temperature: 1, topLogprobs: 4 } as const;
    let stopped = 0;
    for (let seed = 0; seed < 6; seed++) {
      // a threshold between the lowest and highest window confidence of an unstopped run
      const [[free]] = (await served.local.sample({
        ...request,
        prompts: [prompt('ab')],
        seed,
      })) as unknown as [[{ topLogprobs: { logprob: number }[][] }]];
      const confidences = free.topLogprobs.map(
        (row) => -row.reduce((s, e) => s + e.logprob, 0) / row.length,
      );
      const windowSize = 3;
      const windows = confidences
        .slice(windowSize - 1)
        .map(
          (_, i) => confidences.slice(i, i + windowSize).reduce((a, b) => a + b, 0) / windowSize,
        );
      if (windows.length === 0) continue;
      const threshold = (Math.min(...windows) + Math.max(...windows)) / 2;
      const confidenceStop = { windowSize, threshold };
      const [[want]] = (await served.local.sample({
        ...request,
        prompts: [prompt('ab')],
        seed,
        confidenceStop,
      })) as [[never]];
      const logStart = served.server.log.length;
      const [[got]] = (await sampler.sample({
        ...request,
        prompts: ['ab'],
        seed,
        confidenceStop,
      })) as unknown as [[Completion]];
      const w = want as {
        tokenIds: number[];
        finishReason: string;
        text: string;
        topLogprobs: unknown[];
      };
      expect(got!.tokenIds).toEqual(w.tokenIds);
      expect(got!.finishReason).toBe(w.finishReason);
      expect(got!.text).toBe(w.text);
      expect(got!.topLogprobs).toHaveLength(w.tokenIds.length);
      const entry = served.server.log.slice(logStart).find((e) => e.method === 'POST')!;
      expect(entry.body?.stream).toBe(true);
      if (got!.finishReason === 'confidence') {
        stopped++;
        // the client closed the stream before its finish reason
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(entry.choicesServed).toBe(0);
      }
    }
    expect(stopped).toBeGreaterThan(0);
  });

  it('should abort a stream mid-way with AbortedError', async () => {
    const sampler = createOpenAISampler({ baseURL: served.server.baseURL, model: 'tiny', api });
    slow = true;
    const started = served.server.log.length;
    const controller = new AbortController();
    const pending = sampler.sample(
      {
        prompts: ['ab'],
        n: 2,
        maxNewTokens: 200,
        temperature: 1,
        topLogprobs: 2,
        seed: 1,
        confidenceStop: { windowSize: 500, threshold: 0.001 },
      },
      { signal: controller.signal },
    );
    // abort once both streams are open and sending (a fixed delay raced the requests on a busy
    // machine: at 60 ms neither had reached the server yet)
    const open = () =>
      served.server.log.slice(started).filter((e) => e.body?.stream === true && e.tokensSent > 0)
        .length;
    const deadline = Date.now() + 30_000;
    while (open() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await expect(pending).rejects.toSatisfy((error) => AbortedError.isInstance(error));
    slow = false;
    await new Promise((resolve) => setTimeout(resolve, 50));
    // both samples were streamed; one still open at the abort was closed by the client (a short
    // one may have finished first)
    const streams = served.server.log.slice(started).filter((e) => e.body?.stream === true);
    expect(streams.length).toBe(2);
    const cut = streams.filter((e) => e.choicesServed === 0);
    expect(cut.length).toBeGreaterThan(0);
  });
});
