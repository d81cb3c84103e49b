/**
 * The JSON vLLM and llama.cpp's llama-server write for `/v1/completions` and
 * `/v1/chat/completions` (whole and streamed), built from generated tokens. Field by field from
 * vLLM's `CompletionResponse` / `ChatCompletionResponse` and its `_create_completion_logprobs` /
 * `_create_chat_logprobs` (sampled token first, then the top k; logprobs clamped at -9999), and
 * from llama-server's OAI-compatible `completion_token_output` (`{ id, token, bytes, logprob,
 * top_logprobs }` in a `content[]` list on both endpoints).
 * @internal
 */

/** One generated token with what a server reports about it. */
export type GeneratedToken = {
  id: number;
  /** The token's text (the server's decoded piece). */
  piece: string;
  /** The reported logprob of the sampled token (raw or processed, per the server's mode). */
  logprob: number;
  /** The k most likely `{ id, piece, logprob }` of the reported distribution, most likely first. */
  top: { id: number; piece: string; logprob: number }[];
};

/** What a response or a chunk carries for one choice. */
export type ChoiceData = {
  index: number;
  /** Text of these tokens (the whole completion, or a chunk's delta). */
  text: string;
  tokens: GeneratedToken[];
  finishReason: 'stop' | 'length' | null;
};

/** How the request asked for logprobs. */
export type LogprobRequest = {
  /** Logprobs asked for at all. */
  enabled: boolean;
  /** Top logprobs per token (completions `logprobs: k`, chat `top_logprobs: k`). */
  k: number;
  /** vLLM `return_tokens_as_token_ids`. */
  asTokenIds: boolean;
  /** vLLM `return_token_ids`. */
  returnTokenIds: boolean;
};

const bytesOf = (text: string) => [...Buffer.from(text, 'utf8')];
const clamp = (logprob: number) => Math.max(logprob, -9999);

function vllmName(id: number, piece: string, request: LogprobRequest): string {
  return request.asTokenIds ? `token_id:${id}` : piece;
}

/** vLLM's per-position dict: the sampled token first, then the top k (a Python dict: one entry per name). */
function vllmEntries(
  token: GeneratedToken,
  k: number,
): { id: number; piece: string; logprob: number }[] {
  const entries = [{ id: token.id, piece: token.piece, logprob: token.logprob }];
  for (const alternative of token.top.slice(0, k)) {
    if (alternative.id !== token.id) entries.push(alternative);
  }
  return entries;
}

/** vLLM completions `logprobs` (`CompletionLogProbs`). */
export function vllmCompletionLogprobs(
  tokens: GeneratedToken[],
  request: LogprobRequest,
  offset: number,
) {
  const out = {
    text_offset: [] as number[],
    token_logprobs: [] as number[],
    tokens: [] as string[],
    top_logprobs: [] as Record<string, number>[],
  };
  let position = offset;
  for (const token of tokens) {
    const name = vllmName(token.id, token.piece, request);
    out.tokens.push(name);
    out.token_logprobs.push(clamp(token.logprob));
    const dict: Record<string, number> = {};
    // "top num_output_top_logprobs + 1 logprobs, as defined in the openai API"
    for (const entry of vllmEntries(token, request.k)) {
      dict[vllmName(entry.id, entry.piece, request)] = clamp(entry.logprob);
    }
    out.top_logprobs.push(dict);
    out.text_offset.push(position);
    position += name.length;
  }
  return out;
}

/** vLLM chat `logprobs` (`ChatCompletionLogProbs`): `top_logprobs` = the first k of the dict. */
export function vllmChatLogprobs(tokens: GeneratedToken[], request: LogprobRequest) {
  return {
    content: tokens.map((token) => {
      const name = vllmName(token.id, token.piece, request);
      return {
        token: name,
        logprob: clamp(token.logprob),
        bytes: bytesOf(name),
        top_logprobs: vllmEntries(token, request.k)
          .slice(0, request.k)
          .map((entry) => {
            const entryName = vllmName(entry.id, entry.piece, request);
            return { token: entryName, logprob: clamp(entry.logprob), bytes: bytesOf(entryName) };
          }),
      };
    }),
  };
}

/** llama-server's `logprobs` on both endpoints: `{ content: [{ id, token, bytes, logprob, top_logprobs }] }`. */
export function llamaLogprobs(tokens: GeneratedToken[], k: number) {
  // llama.cpp writes log(0) as the lowest float so the JSON never has -inf
  const log = (value: number) => (Number.isFinite(value) ? value : -3.4028234663852886e38);
  return {
    content: tokens.map((token) => ({
      id: token.id,
      token: token.piece,
      bytes: bytesOf(token.piece),
      logprob: log(token.logprob),
      top_logprobs: token.top.slice(0, k).map((entry) => ({
        id: entry.id,
        token: entry.piece,
        bytes: bytesOf(entry.piece),
        logprob: log(entry.logprob),
      })),
    })),
  };
}

/** One choice of a whole (non-streamed) response. */
export function wholeChoice(
  dialect: 'vllm' | 'llama-server',
  api: 'completions' | 'chat',
  choice: ChoiceData,
  request: LogprobRequest,
): Record<string, unknown> {
  const logprobs = !request.enabled
    ? null
    : dialect === 'llama-server'
      ? llamaLogprobs(choice.tokens, request.k)
      : api === 'chat'
        ? vllmChatLogprobs(choice.tokens, request)
        : vllmCompletionLogprobs(choice.tokens, request, 0);
  if (dialect === 'llama-server') {
    return api === 'chat'
      ? {
          finish_reason: choice.finishReason,
          index: choice.index,
          message: { role: 'assistant', content: choice.text },
          ...(logprobs ? { logprobs } : {}),
        }
      : { text: choice.text, index: choice.index, logprobs, finish_reason: choice.finishReason };
  }
  const ids = request.returnTokenIds ? choice.tokens.map((token) => token.id) : null;
  if (api === 'chat') {
    return {
      index: choice.index,
      message: {
        role: 'assistant',
        content: choice.text,
        refusal: null,
        annotations: null,
        audio: null,
        function_call: null,
        tool_calls: [],
        reasoning_content: null,
      },
      logprobs,
      finish_reason: choice.finishReason,
      stop_reason: null,
      token_ids: ids,
    };
  }
  return {
    index: choice.index,
    text: choice.text,
    logprobs,
    finish_reason: choice.finishReason,
    stop_reason: null,
    token_ids: ids,
    prompt_logprobs: null,
    prompt_token_ids: null,
  };
}

/** One choice of a streamed chunk (a delta). */
export function chunkChoice(
  dialect: 'vllm' | 'llama-server',
  api: 'completions' | 'chat',
  choice: ChoiceData,
  request: LogprobRequest,
  offset: number,
  first: boolean,
): Record<string, unknown> {
  const hasTokens = choice.tokens.length > 0;
  const logprobs =
    !request.enabled || !hasTokens
      ? null
      : dialect === 'llama-server'
        ? llamaLogprobs(choice.tokens, request.k)
        : api === 'chat'
          ? vllmChatLogprobs(choice.tokens, request)
          : vllmCompletionLogprobs(choice.tokens, request, offset);
  if (api === 'chat') {
    const delta: Record<string, unknown> =
      first && !hasTokens
        ? { role: 'assistant', content: dialect === 'llama-server' ? null : '' }
        : hasTokens || choice.text
          ? { content: choice.text }
          : {};
    return {
      index: choice.index,
      delta,
      logprobs,
      finish_reason: choice.finishReason,
      ...(dialect === 'vllm'
        ? {
            stop_reason: null,
            ...(request.returnTokenIds && hasTokens
              ? { token_ids: choice.tokens.map((t) => t.id) }
              : {}),
          }
        : {}),
    };
  }
  return {
    index: choice.index,
    text: choice.text,
    logprobs,
    finish_reason: choice.finishReason,
    ...(dialect === 'vllm'
      ? {
          stop_reason: null,
          ...(request.returnTokenIds ? { token_ids: choice.tokens.map((t) => t.id) } : {}),
        }
      : {}),
  };
}

/** The response envelope (`id`, `object`, `created`, `model`, …). */
export function envelope(
  dialect: 'vllm' | 'llama-server',
  api: 'completions' | 'chat',
  id: string,
  model: string,
  chunk: boolean,
): Record<string, unknown> {
  const object =
    api === 'chat' ? (chunk ? 'chat.completion.chunk' : 'chat.completion') : 'text_completion';
  const base = { id, object, created: Math.floor(Date.now() / 1000), model };
  return dialect === 'llama-server'
    ? { ...base, system_fingerprint: 'b0000-rlvr-test' }
    : { ...base, ...(chunk ? {} : { service_tier: null, system_fingerprint: null }) };
}

/** Error bodies as each server writes them. */
export function errorBody(
  dialect: 'vllm' | 'llama-server',
  status: number,
  message: string,
  type: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  if (dialect === 'vllm' && status === 401) return { error: 'Unauthorized' };
  return dialect === 'vllm'
    ? { error: { message, type, param: null, code: status, ...extra } }
    : { error: { code: status, message, type, ...extra } };
}
