import type { FinishReason, TopLogprob } from '@rlvr/core';

/** One token as a server reported it: its id when known, its text, its logprob and its alternatives. */
export type ServedToken = {
  id: number | undefined;
  token: string;
  logprob: number;
  top: { id: number | undefined; token: string; logprob: number }[];
};

/** Thrown by the parsers for a body that is not the endpoint's shape; the caller names the request. */
export class ShapeError extends Error {}

const PLACEHOLDER = /^token_id:(\d+)$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function asNumber(value: unknown, where: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new ShapeError(`${where} is not a number (${JSON.stringify(value)})`);
  }
  return value;
}

/** The id in a vLLM `token_id:N` placeholder (`return_tokens_as_token_ids`), else `id`. */
function idOf(token: string, id: unknown): number | undefined {
  if (typeof id === 'number' && Number.isInteger(id)) return id;
  const match = PLACEHOLDER.exec(token);
  return match ? Number(match[1]) : undefined;
}

/** A logprob from `logprob`, or from llama-server's `prob` (`post_sampling_probs`). */
function logprobOf(entry: Record<string, unknown>, where: string): number {
  if (entry.logprob !== undefined) return asNumber(entry.logprob, `${where}.logprob`);
  if (entry.prob !== undefined) return Math.log(asNumber(entry.prob, `${where}.prob`));
  throw new ShapeError(`${where} has neither logprob nor prob`);
}

/**
 * The per-token entries of a choice's `logprobs`, from either shape in the wild:
 * the legacy completions shape `{ tokens, token_logprobs, top_logprobs: [{ token: logprob }] }`
 * (vLLM, OpenAI's legacy endpoint) or the chat shape `{ content: [{ token, logprob, id?,
 * top_logprobs: [{ token, logprob, id? }] }] }` (OpenAI chat, vLLM chat, llama-server on both
 * endpoints; llama-server's `post_sampling_probs` writes `prob` / `top_probs`). `null` logprobs: [].
 */
export function parseLogprobs(logprobs: unknown, where: string): ServedToken[] {
  if (logprobs === null || logprobs === undefined) return [];
  if (!isRecord(logprobs)) throw new ShapeError(`${where} is not an object`);
  if (Array.isArray(logprobs.content) || logprobs.content === null) {
    return ((logprobs.content ?? []) as unknown[]).map((entry, index) => {
      const at = `${where}.content[${index}]`;
      if (!isRecord(entry) || typeof entry.token !== 'string') {
        throw new ShapeError(`${at} is not a { token, logprob } entry`);
      }
      const tops = (entry.top_logprobs ?? entry.top_probs ?? []) as unknown;
      if (!Array.isArray(tops)) throw new ShapeError(`${at}.top_logprobs is not an array`);
      return {
        id: idOf(entry.token, entry.id),
        token: entry.token,
        logprob: logprobOf(entry, at),
        top: tops.map((alternative, rank) => {
          const alt = `${at}.top_logprobs[${rank}]`;
          if (!isRecord(alternative) || typeof alternative.token !== 'string') {
            throw new ShapeError(`${alt} is not a { token, logprob } entry`);
          }
          return {
            id: idOf(alternative.token, alternative.id),
            token: alternative.token,
            logprob: logprobOf(alternative, alt),
          };
        }),
      };
    });
  }
  const { tokens, token_logprobs: values, top_logprobs: tops } = logprobs;
  if (!Array.isArray(tokens) || !Array.isArray(values)) {
    throw new ShapeError(`${where} has neither content[] nor tokens[] / token_logprobs[]`);
  }
  if (values.length !== tokens.length || (Array.isArray(tops) && tops.length !== tokens.length)) {
    throw new ShapeError(`${where}: tokens, token_logprobs and top_logprobs differ in length`);
  }
  return tokens.map((token, index) => {
    if (typeof token !== 'string')
      throw new ShapeError(`${where}.tokens[${index}] is not a string`);
    const top = Array.isArray(tops) ? tops[index] : null;
    if (top !== null && top !== undefined && !isRecord(top)) {
      throw new ShapeError(`${where}.top_logprobs[${index}] is not an object`);
    }
    return {
      id: idOf(token, undefined),
      token,
      logprob: asNumber(values[index], `${where}.token_logprobs[${index}]`),
      top: Object.entries(top ?? {}).map(([key, value]) => ({
        id: idOf(key, undefined),
        token: key,
        logprob: asNumber(value, `${where}.top_logprobs[${index}]['${key}']`),
      })),
    };
  });
}

/**
 * The `k` most likely of a position's reported alternatives (core's order: most likely first,
 * ties to the lower id), deduplicated by id. vLLM lists the sampled token first (its completions
 * endpoint adds it as a (k+1)-th entry; its chat endpoint keeps the first k, so the sampler asks
 * it for k + 1 and a sampled token outside the top k takes the k-th place only at k = 20, its
 * default `--max-logprobs`). `undefined` when an id is unknown.
 */
export function topOf(token: ServedToken, k: number): TopLogprob[] | undefined {
  const byId = new Map<number, number>();
  for (const alternative of token.top) {
    if (alternative.id === undefined) return undefined;
    byId.set(alternative.id, alternative.logprob);
  }
  return [...byId.entries()]
    .map(([tokenId, logprob]) => ({ tokenId, logprob }))
    .sort((a, b) => b.logprob - a.logprob || a.tokenId - b.tokenId)
    .slice(0, k);
}

/** core's finish reason for a server's `finish_reason` (`undefined`: not finished). */
export function finishReasonOf(value: unknown): FinishReason | undefined {
  switch (value) {
    case 'length':
      return 'length';
    case 'stop':
    case 'eos':
    case 'tool_calls':
    case 'function_call':
    case 'content_filter':
      return 'stop';
    case 'abort':
    case 'cancelled':
      return 'abort';
    default:
      // a reason this list does not know (a server's own) still ends the completion
      return typeof value === 'string' && value !== '' ? 'stop' : undefined;
  }
}

/** A choice of a non-streamed response, parsed. */
export type ParsedChoice = {
  index: number;
  text: string;
  finishReason: FinishReason;
  tokens: ServedToken[];
  /** vLLM's `token_ids` (`return_token_ids`). */
  tokenIds: number[] | undefined;
  promptTokenIds: number[] | undefined;
};

function idList(value: unknown, where: string): number[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((id) => Number.isInteger(id))) {
    throw new ShapeError(`${where} is not an array of token ids`);
  }
  return value as number[];
}

/** Text of a choice: `text` (completions) or `message.content` / `delta.content` (chat). */
export function choiceText(choice: Record<string, unknown>, where: string): string {
  if (typeof choice.text === 'string') return choice.text;
  if (choice.text === null) return '';
  const message = (choice.message ?? choice.delta) as unknown;
  if (isRecord(message)) {
    if (typeof message.content === 'string') return message.content;
    if (message.content === null || message.content === undefined) return '';
  }
  if (choice.text === undefined && message === undefined) return '';
  throw new ShapeError(`${where} has no text (text / message.content)`);
}

/** The choices of a non-streamed completions or chat response. */
export function parseResponse(body: unknown): { choices: ParsedChoice[]; id: string | undefined } {
  if (!isRecord(body) || !Array.isArray(body.choices)) {
    throw new ShapeError(
      `the body is not a completion response (no choices[]): ${JSON.stringify(body)?.slice(0, 200)}`,
    );
  }
  const choices = body.choices.map((choice, position) => {
    const where = `choices[${position}]`;
    if (!isRecord(choice)) throw new ShapeError(`${where} is not an object`);
    const index = choice.index === undefined ? position : asNumber(choice.index, `${where}.index`);
    // a whole response is complete: a missing or unknown reason (some servers send null) is a stop
    const finishReason = finishReasonOf(choice.finish_reason) ?? 'stop';
    return {
      index,
      text: choiceText(choice, where),
      finishReason,
      tokens: parseLogprobs(choice.logprobs, `${where}.logprobs`),
      tokenIds: idList(choice.token_ids, `${where}.token_ids`),
      promptTokenIds: idList(
        choice.prompt_token_ids ?? body.prompt_token_ids,
        `${where}.prompt_token_ids`,
      ),
    };
  });
  return { choices, id: typeof body.id === 'string' ? body.id : undefined };
}
