import type { Completion, FinishReason, TopLogprob } from '@rlvr/core';
import type { ResolvedOptions } from './options.js';
import { type ServedToken, ShapeError, topOf } from './parse.js';
import type { ResolvedRequest } from './request.js';

/** What a choice carried, streamed or not. */
export type ChoiceParts = {
  text: string;
  finishReason: FinishReason;
  tokens: ServedToken[];
  tokenIds: number[] | undefined;
  promptTokenIds: number[] | undefined;
};

/** Thrown when per-token data was asked for and the server gave no token ids. */
export class NoTokenIdsError extends Error {}

/** Whether the request needs per-token data (so token ids). */
export function needsTokens(request: ResolvedRequest): boolean {
  return (
    request.topLogprobs > 0 || request.confidenceStop !== undefined || request.returnModelLogprobs
  );
}

/** The sampled token ids of a choice: vLLM's `token_ids`, else the ids in its logprobs, else undefined. */
export function idsOf(parts: Pick<ChoiceParts, 'tokens' | 'tokenIds'>): number[] | undefined {
  const { tokens, tokenIds } = parts;
  if (tokens.length === 0) return undefined;
  if (tokenIds !== undefined) {
    if (tokenIds.length !== tokens.length) {
      throw new ShapeError(
        `token_ids has ${tokenIds.length} ids but logprobs has ${tokens.length} tokens`,
      );
    }
    return tokenIds;
  }
  const ids = tokens.map((token) => token.id);
  return ids.every((id) => id !== undefined) ? (ids as number[]) : undefined;
}

/**
 * A core `Completion` from a choice: token ids, the server's logprobs (marked
 * `behaviourLogprobs` as the options say), top logprobs and model logprobs when asked; a
 * text-only completion when the server gave no ids.
 * @throws {NoTokenIdsError} when per-token data was asked for and there are no ids.
 */
export function toCompletion(
  parts: ChoiceParts,
  request: ResolvedRequest,
  options: ResolvedOptions,
): Completion {
  const ids = idsOf(parts);
  if (ids === undefined) {
    if (needsTokens(request)) throw new NoTokenIdsError('the server returned no token ids');
    return {
      text: parts.text,
      tokenIds: [],
      logprobs: [],
      finishReason: parts.finishReason,
      behaviourLogprobs: false,
    };
  }
  const logprobs = parts.tokens.map((token) => token.logprob);
  const completion: Completion = {
    text: parts.text,
    tokenIds: [...ids],
    logprobs,
    finishReason: parts.finishReason,
    behaviourLogprobs: options.behaviourLogprobs,
  };
  if (request.returnModelLogprobs) completion.modelLogprobs = [...logprobs];
  if (request.topLogprobs > 0) {
    const rows: TopLogprob[][] = [];
    for (const token of parts.tokens) {
      const row = topOf(token, request.topLogprobs);
      if (row === undefined) {
        throw new NoTokenIdsError('the server returned top logprobs without token ids');
      }
      rows.push(row);
    }
    completion.topLogprobs = rows;
  }
  if (parts.promptTokenIds !== undefined) completion.promptTokenIds = [...parts.promptTokenIds];
  return completion;
}
