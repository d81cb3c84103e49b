import { describe, expect, it } from 'vitest';
import { validateDistillOptions } from '../train/distill-options.js';
import { tokenizeTraces } from './tokenize-traces.js';
import type { TraceRecord } from './trace-record.js';

const served: TraceRecord = {
  promptId: 'p1',
  prompt: '1+1=',
  sampleIndex: 0,
  promptTokenIds: [7, 8],
  completion: 'ab',
  tokenIds: [],
  logprobs: [],
  finishReason: 'stop',
  reward: 1,
  accepted: true,
};
const encode = (text: string) => [...text].map((char) => char.charCodeAt(0) - 90);

describe('tokenizeTraces', () => {
  it("should re-encode the completion text with the student's tokenizer, EOS after a stop", () => {
    const [stop, length] = tokenizeTraces(
      [served, { ...served, sampleIndex: 1, finishReason: 'length', tokenIds: [40, 41] }],
      { encode, eosTokenId: 2 },
    );
    expect(stop).toEqual({
      promptId: 'p1',
      prompt: '1+1=',
      sampleIndex: 0,
      completion: 'ab',
      tokenIds: [7, 8, 2],
      finishReason: 'stop',
      reward: 1,
      accepted: true,
    });
    expect(length!.tokenIds).toEqual([7, 8]);
    expect(() => tokenizeTraces([served], { encode, eos: 2 } as never)).toThrow(
      /options.eos.*'eosTokenId'/,
    );
  });

  it('should be what distillStudent needs for a text-only trace, which it refuses as it is', () => {
    const trainer = { sftStep: () => undefined, logitsStep: () => undefined };
    const options = { trainer, epochs: 1, batchSize: 1, loss: { type: 'sft' } } as never;
    expect(() =>
      validateDistillOptions({ ...(options as object), traces: [served] } as never),
    ).toThrow(/options.traces\[0\].tokenIds.*text-only trace.*tokenizeTraces/);
    const tokenized = tokenizeTraces([served], { encode });
    expect(() =>
      validateDistillOptions({ ...(options as object), traces: tokenized } as never),
    ).not.toThrow();
  });
});
