import type { ConfidenceStop, FinishReason } from '@rlvr/core';
import {
  choiceText,
  finishReasonOf,
  parseLogprobs,
  type ServedToken,
  ShapeError,
  topOf,
} from './parse.js';

/** Window-confidence bookkeeping of DeepConf's online stop for one streamed completion. */
class ConfidenceWindow {
  private readonly values: number[] = [];
  private sum = 0;

  constructor(
    private readonly stop: ConfidenceStop,
    private readonly k: number,
  ) {}

  /** Adds a token's confidence; true when the window mean fell below the threshold. */
  push(token: ServedToken): boolean {
    const top = topOf(token, this.k);
    if (top === undefined || top.length === 0) {
      throw new ShapeError('a streamed token has no top logprobs (needed for the confidence stop)');
    }
    const confidence = -top.reduce((total, entry) => total + entry.logprob, 0) / top.length;
    this.values.push(confidence);
    this.sum += confidence;
    const size = this.stop.windowSize;
    if (this.values.length > size) this.sum -= this.values[this.values.length - 1 - size] as number;
    return this.values.length >= size && this.sum / size < this.stop.threshold;
  }
}

/** What a consumed stream gave for its (single) choice. */
export type StreamedChoice = {
  text: string;
  finishReason: FinishReason | undefined;
  tokens: ServedToken[];
  tokenIds: number[] | undefined;
  promptTokenIds: number[] | undefined;
  /** Chunks read (for the `stream-cut` message). */
  chunks: number;
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Reads a streamed completions / chat response of one choice. With `confidence`, stops at the
 * first token whose window confidence falls below the threshold (`finishReason: 'confidence'`,
 * tokens kept up to and including it) and returns early: the caller's `break` closes the stream.
 * A stream that ends without a finish reason returns `finishReason: undefined` (cut).
 */
export async function readStream(
  stream: AsyncIterable<unknown>,
  confidence: { stop: ConfidenceStop; k: number } | undefined,
): Promise<StreamedChoice> {
  const window = confidence ? new ConfidenceWindow(confidence.stop, confidence.k) : undefined;
  const out: StreamedChoice = {
    text: '',
    finishReason: undefined,
    tokens: [],
    tokenIds: undefined,
    promptTokenIds: undefined,
    chunks: 0,
  };
  // crossed at a chunk's last token: the next chunk says whether that token also ended the
  // completion (llama-server sends the finish reason in a chunk of its own)
  let pending = false;
  for await (const chunk of stream) {
    out.chunks += 1;
    if (!isRecord(chunk) || !Array.isArray(chunk.choices)) {
      throw new ShapeError(`chunk ${out.chunks} has no choices[]`);
    }
    for (const choice of chunk.choices) {
      if (!isRecord(choice)) throw new ShapeError(`chunk ${out.chunks}: a choice is not an object`);
      const where = `chunk ${out.chunks}.choices[${String(choice.index ?? 0)}]`;
      const delta = choiceText(choice, where);
      const tokens = parseLogprobs(choice.logprobs, `${where}.logprobs`);
      const finish = finishReasonOf(choice.finish_reason);
      if (pending) {
        out.finishReason = tokens.length === 0 && finish !== undefined ? finish : 'confidence';
        if (out.finishReason !== 'confidence') out.text += delta;
        return out;
      }
      const ids = choice.token_ids;
      if (Array.isArray(ids)) out.tokenIds = [...(out.tokenIds ?? []), ...(ids as number[])];
      if (Array.isArray(choice.prompt_token_ids))
        out.promptTokenIds = choice.prompt_token_ids as number[];
      if (window) {
        for (const [position, token] of tokens.entries()) {
          out.tokens.push(token);
          if (!window.push(token)) continue;
          const last = position === tokens.length - 1;
          if (last && finish !== undefined) break; // the token also ended the completion
          // keep the text up to this token: the token strings when they are real text
          const realText = tokens.every((entry) => !entry.token.startsWith('token_id:'));
          out.text +=
            last || !realText
              ? delta
              : tokens
                  .slice(0, position + 1)
                  .map((t) => t.token)
                  .join('');
          if (out.tokenIds) out.tokenIds = out.tokenIds.slice(0, out.tokens.length);
          if (last) {
            pending = true;
            break;
          }
          out.finishReason = 'confidence';
          return out;
        }
        if (pending) continue;
      } else {
        out.tokens.push(...tokens);
      }
      out.text += delta;
      if (finish !== undefined) out.finishReason = finish;
    }
  }
  if (pending) out.finishReason = 'confidence';
  return out;
}
