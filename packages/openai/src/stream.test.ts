import { describe, expect, it } from 'vitest';
import { readStream } from './stream.js';

/** llama-server-style chunks: one token each, then a chunk with only the finish reason. */
function chunks(logprobs: number[], finish: 'stop' | null) {
  const out: unknown[] = logprobs.map((logprob, index) => ({
    choices: [
      {
        index: 0,
        delta: { content: `t${index}` },
        logprobs: {
          content: [
            {
              id: index,
              token: `t${index}`,
              logprob,
              top_logprobs: [{ id: index, token: `t${index}`, logprob }],
            },
          ],
        },
        finish_reason: null,
      },
    ],
  }));
  if (finish) out.push({ choices: [{ index: 0, delta: {}, finish_reason: finish }] });
  return (async function* () {
    yield* out;
  })();
}

describe('readStream with a confidence stop', () => {
  const stop = { stop: { windowSize: 2, threshold: 1 }, k: 1 };

  it('should stop at the first token whose window falls below the threshold', async () => {
    // confidences 2, 2, 0.1, 0.1: window means 2, 1.05, 0.1 → stops at token 3 (index 3)
    const read = await readStream(chunks([-2, -2, -0.1, -0.1, -3], 'stop'), stop);
    expect(read.finishReason).toBe('confidence');
    expect(read.tokens.map((t) => t.id)).toEqual([0, 1, 2, 3]);
    expect(read.text).toBe('t0t1t2t3');
  });

  it('should keep the finish reason of a crossing token that also ended the completion', async () => {
    const read = await readStream(chunks([-2, -2, -0.1, -0.1], 'stop'), stop);
    expect(read.finishReason).toBe('stop');
    expect(read.tokens).toHaveLength(4);
  });

  it('should report a stream without a finish reason as cut (undefined)', async () => {
    const read = await readStream(chunks([-2, -2], null), undefined);
    expect(read.finishReason).toBeUndefined();
    expect(read.chunks).toBe(2);
  });
});
