import { describe, expect, it } from 'vitest';
import { idsOf, toCompletion } from './completion.js';
import { resolveOptions } from './options.js';
import { parseLogprobs, parseResponse, topOf } from './parse.js';
import { resolveRequest } from './request.js';

const options = resolveOptions({ baseURL: 'http://x/v1', model: 'm', api: 'chat' });
const request = (extra: Record<string, unknown> = {}) =>
  resolveRequest({ prompts: ['q'], n: 1, maxNewTokens: 4, ...extra });

describe('parseResponse', () => {
  it("should read OpenAI's chat shape without token ids as a text-only completion", () => {
    // shape of OpenAI's documented chat.completion with logprobs: true, top_logprobs: 2
    const body = {
      id: 'chatcmpl-123',
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hi', refusal: null },
          logprobs: {
            content: [
              {
                token: 'Hi',
                logprob: -0.31,
                bytes: [72, 105],
                top_logprobs: [
                  { token: 'Hi', logprob: -0.31, bytes: [72, 105] },
                  { token: 'Hello', logprob: -1.4, bytes: null },
                ],
              },
            ],
            refusal: null,
          },
          finish_reason: 'stop',
        },
      ],
    };
    const [choice] = parseResponse(body).choices;
    expect(choice).toMatchObject({ index: 0, text: 'Hi', finishReason: 'stop' });
    expect(toCompletion(choice!, request(), options)).toEqual({
      text: 'Hi',
      tokenIds: [],
      logprobs: [],
      finishReason: 'stop',
      behaviourLogprobs: false,
    });
    expect(() => toCompletion(choice!, request({ topLogprobs: 2 }), options)).toThrow(
      /no token ids/,
    );
  });

  it("should read vLLM's legacy completions shape with token_id placeholders (k + 1 entries)", () => {
    const body = {
      choices: [
        {
          index: 0,
          text: ' 42',
          logprobs: {
            text_offset: [0, 11],
            token_logprobs: [-0.5, -9999.0],
            tokens: ['token_id:220', 'token_id:2983'],
            top_logprobs: [
              { 'token_id:220': -0.5, 'token_id:17': -1.2 },
              { 'token_id:2983': -9999.0, 'token_id:5': -0.1, 'token_id:6': -2.5 },
            ],
          },
          finish_reason: 'length',
          stop_reason: null,
        },
      ],
    };
    const [choice] = parseResponse(body).choices;
    const completion = toCompletion(
      choice!,
      request({ topLogprobs: 1, returnModelLogprobs: true }),
      options,
    );
    expect(completion.tokenIds).toEqual([220, 2983]);
    expect(completion.logprobs).toEqual([-0.5, -9999]);
    expect(completion.modelLogprobs).toEqual([-0.5, -9999]);
    // the sampled token (first in vLLM's dict) is not among the top 1 of the second position
    expect(completion.topLogprobs).toEqual([
      [{ tokenId: 220, logprob: -0.5 }],
      [{ tokenId: 5, logprob: -0.1 }],
    ]);
    expect(completion.finishReason).toBe('length');
  });

  it("should read llama-server's content[] on /v1/completions, with ids, and its post-sampling probs", () => {
    const entries = parseLogprobs(
      {
        content: [
          {
            id: 7,
            token: 'a',
            bytes: [97],
            prob: 0.5,
            top_probs: [
              { id: 7, token: 'a', bytes: [97], prob: 0.5 },
              { id: 3, token: 'b', bytes: [98], prob: 0.25 },
            ],
          },
        ],
      },
      'logprobs',
    );
    expect(entries[0]!.logprob).toBeCloseTo(Math.log(0.5), 12);
    expect(topOf(entries[0]!, 2)).toEqual([
      { tokenId: 7, logprob: Math.log(0.5) },
      { tokenId: 3, logprob: Math.log(0.25) },
    ]);
    expect(idsOf({ tokens: entries, tokenIds: undefined })).toEqual([7]);
    // vLLM's token_ids must line up with the logprobs
    expect(() => idsOf({ tokens: entries, tokenIds: [1, 2] })).toThrow(/token_ids has 2 ids/);
  });

  it('should be lenient with a missing finish reason or null text, strict with a body without choices', () => {
    const [choice] = parseResponse({ choices: [{ text: null, finish_reason: null }] }).choices;
    expect(choice).toMatchObject({ text: '', finishReason: 'stop', index: 0 });
    expect(() => parseResponse({ object: 'error', message: 'boom' })).toThrow(/no choices/);
    expect(() => parseResponse('<html>')).toThrow(/no choices/);
  });
});
