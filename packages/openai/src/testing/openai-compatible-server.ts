import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Completion, SampleRequest, Sampler } from '@rlvr/core';
import type { LogprobsMode } from '../options.js';
import {
  type ChoiceData,
  chunkChoice,
  envelope,
  errorBody,
  type GeneratedToken,
  type LogprobRequest,
  wholeChoice,
} from './server-shapes.js';

/** The response shapes the server writes. */
export type ServedDialect = 'vllm' | 'llama-server';

/** What the server needs of a tokenizer (`@rlvr/model`'s `Tokenizer` fits). */
export type ServerTokenizer = {
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  applyChatTemplate?(messages: readonly { role: string; content: string }[]): string;
};

/** A fault the server answers a request with instead of (or while) serving it. */
export type ServerFault =
  /** HTTP 429; `Retry-After` in seconds (default 0.05), omitted with `retryAfterSeconds: null`. */
  | { type: 'rate-limit'; retryAfterSeconds?: number | null }
  /** HTTP 500 (or `status`) with the server's error body. */
  | { type: 'server-error'; status?: number }
  /** Waits `ms` before answering (a slow response; the client's timeout may end it first). */
  | { type: 'delay'; ms: number }
  /** Streams `afterChunks` chunks then closes the connection (whole responses: half the body). */
  | { type: 'cut-stream'; afterChunks: number }
  /** HTTP 200 with a truncated JSON body. */
  | { type: 'malformed-json' }
  /** Leaves the last choice out. */
  | { type: 'fewer-choices' }
  /** Closes the connection without an answer. */
  | { type: 'drop-connection' }
  /** Streams with a pause of `msPerChunk` between chunks (tokens arriving as a server generates them). */
  | { type: 'slow-stream'; msPerChunk: number };

/** One request the server saw. */
export type ServerLogEntry = {
  index: number;
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  status: number;
  fault: ServerFault['type'] | undefined;
  /** Choices answered in full (whole responses, or streams that reached their finish reason). */
  choicesServed: number;
  /** Tokens written to the client (streams closed early write fewer than generated). */
  tokensSent: number;
  /** Tokens the backing sampler generated for this request. */
  tokensGenerated: number;
};

/** Options of {@link startOpenAICompatibleServer}. */
export type OpenAICompatibleServerOptions = {
  /** The model that generates (e.g. `@rlvr/rollout`'s `createOnnxSampler`). */
  sampler: Sampler;
  tokenizer: ServerTokenizer;
  dialect: ServedDialect;
  /** The served model name (vLLM answers 404 for any other; llama-server serves any name). */
  model: string;
  /** Require `Authorization: Bearer <apiKey>` (401 otherwise). */
  apiKey?: string;
  /** Which distribution the logprobs are of (default `raw_logprobs`, both servers' default). */
  logprobsMode?: LogprobsMode;
  /** Context length: prompt tokens + max_tokens above it is a 400 (the server's own message). */
  maxModelLen?: number;
  /** Answer `n` > 1 with llama-server's refusal (its behaviour before Dec 2025; HTTP 500). */
  refuseN?: boolean;
  /** Ignore `n` and answer one choice (Ollama, some llama.cpp builds). */
  ignoreN?: boolean;
  /** Called per generation request (0-based `index`); a fault replaces or disturbs the answer. */
  fault?: (request: { index: number; body: Record<string, unknown> }) => ServerFault | undefined;
};

/** A running server. */
export type OpenAICompatibleServer = {
  /** e.g. `http://127.0.0.1:41234/v1`. */
  baseURL: string;
  log: ServerLogEntry[];
  close(): Promise<void>;
};

type Parsed = {
  api: 'completions' | 'chat';
  prompt: string | number[];
  promptTokens: number;
  n: number;
  stream: boolean;
  request: Omit<SampleRequest, 'prompts' | 'n'>;
  logprobs: LogprobRequest;
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function parseRequest(
  api: 'completions' | 'chat',
  body: Record<string, unknown>,
  options: OpenAICompatibleServerOptions,
): Parsed {
  const { dialect, tokenizer } = options;
  if (dialect === 'vllm' && body.model !== options.model) {
    throw new HttpError(
      404,
      `The model \`${String(body.model)}\` does not exist.`,
      'NotFoundError',
      {
        param: 'model',
      },
    );
  }
  let prompt: string | number[];
  if (api === 'chat') {
    const messages = body.messages as { role: string; content: string }[] | undefined;
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new HttpError(400, 'messages is required', 'BadRequestError');
    }
    const text = tokenizer.applyChatTemplate
      ? tokenizer.applyChatTemplate(messages)
      : messages.map((message) => message.content).join('\n');
    prompt = tokenizer.encode(text, { addSpecialTokens: false });
  } else if (typeof body.prompt === 'string' || Array.isArray(body.prompt)) {
    prompt = body.prompt as string | number[];
  } else {
    throw new HttpError(400, '"prompt" is required', 'BadRequestError');
  }
  const promptTokens = typeof prompt === 'string' ? tokenizer.encode(prompt).length : prompt.length;
  const n = options.ignoreN ? 1 : (num(body.n) ?? 1);
  if (options.refuseN && n !== 1) {
    throw new HttpError(500, 'Only one completion choice is allowed', 'server_error');
  }
  const maxNewTokens = num(body.max_tokens) ?? num(body.max_completion_tokens) ?? 16;
  if (options.maxModelLen !== undefined && promptTokens + maxNewTokens > options.maxModelLen) {
    throw dialect === 'vllm'
      ? new HttpError(
          400,
          `This model's maximum context length is ${options.maxModelLen} tokens. However, your request has ${promptTokens} input tokens and requested ${maxNewTokens} output tokens. Please reduce the length of the input messages.`,
          'BadRequestError',
        )
      : new HttpError(
          400,
          'the request exceeds the available context size, try increasing it',
          'exceed_context_size_error',
          {
            n_prompt_tokens: promptTokens,
            n_ctx: options.maxModelLen,
          },
        );
  }
  const topK = num(body.top_k);
  const stop = typeof body.stop === 'string' ? [body.stop] : (body.stop as string[] | undefined);
  const k =
    api === 'chat'
      ? body.logprobs === true
        ? (num(body.top_logprobs) ?? (dialect === 'llama-server' ? 20 : 0))
        : 0
      : (num(body.logprobs) ?? 0);
  const enabled = api === 'chat' ? body.logprobs === true : typeof body.logprobs === 'number';
  if (dialect === 'llama-server' && enabled && k === 0) {
    // n_probs 0: llama-server reports nothing per token
  }
  return {
    api,
    prompt,
    promptTokens,
    n,
    stream: body.stream === true,
    request: {
      maxNewTokens,
      temperature: num(body.temperature) ?? 1,
      topP: num(body.top_p) ?? 1,
      topK: topK === undefined || topK < 0 ? 0 : topK,
      minP: num(body.min_p) ?? 0,
      repetitionPenalty: num(body.repetition_penalty) ?? num(body.repeat_penalty) ?? 1,
      ...(stop && stop.length > 0 ? { stop } : {}),
      seed: num(body.seed) ?? Math.floor(Math.random() * 2 ** 31),
      returnModelLogprobs: true,
      ...(enabled && k > 0 ? { topLogprobs: k } : {}),
    },
    logprobs: {
      enabled: enabled && !(dialect === 'llama-server' && k === 0),
      k,
      asTokenIds: body.return_tokens_as_token_ids === true,
      returnTokenIds: body.return_token_ids === true,
    },
  };
}

function tokensOf(
  completion: Completion,
  tokenizer: ServerTokenizer,
  mode: LogprobsMode,
): GeneratedToken[] {
  const piece = (id: number) => tokenizer.decode([id]);
  return completion.tokenIds.map((id, position) => ({
    id,
    piece: piece(id),
    logprob:
      mode === 'raw_logprobs'
        ? (completion.modelLogprobs?.[position] as number)
        : (completion.logprobs[position] as number),
    top: (completion.topLogprobs?.[position] ?? []).map((entry) => ({
      id: entry.tokenId,
      piece: piece(entry.tokenId),
      logprob: entry.logprob,
    })),
  }));
}

/** The text each token adds (the pieces concatenate to the completion's text, stop strings cut). */
function textDeltas(completion: Completion, tokenizer: ServerTokenizer): string[] {
  const deltas: string[] = [];
  let sent = 0;
  for (let end = 1; end <= completion.tokenIds.length; end++) {
    const decoded = tokenizer.decode(completion.tokenIds.slice(0, end), {
      skipSpecialTokens: true,
    });
    const upto = Math.max(sent, Math.min(decoded.length, completion.text.length));
    deltas.push(completion.text.slice(sent, upto));
    sent = upto;
  }
  if (deltas.length > 0) deltas[deltas.length - 1] += completion.text.slice(sent);
  return deltas;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts an OpenAI-compatible HTTP server on 127.0.0.1 (a free port) that generates with a real
 * rlvr `Sampler` and answers in vLLM's or llama-server's JSON, whole or streamed (SSE), with `n`,
 * logprobs (raw or processed), token ids and the servers' error bodies, plus injected faults.
 * For tests and benchmarks of code that talks to served models, on machines without a model
 * server. Seeds: a request for `n` samples with seed `s` answers what
 * `sampler.sample({ prompts: [prompt], n, seed: s })` gives (vLLM seeds its n children `s`,
 * `s + 1`, …); without a seed a random one is drawn. Streams are written after generation.
 */
export async function startOpenAICompatibleServer(
  options: OpenAICompatibleServerOptions,
): Promise<OpenAICompatibleServer> {
  const log: ServerLogEntry[] = [];
  let generation = 0;
  const mode = options.logprobsMode ?? 'raw_logprobs';
  const { dialect } = options;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').replace(/\?.*$/, '');
    const entry: ServerLogEntry = {
      index: log.length,
      method: req.method ?? 'GET',
      path,
      body: undefined,
      status: 200,
      fault: undefined,
      choicesServed: 0,
      tokensSent: 0,
      tokensGenerated: 0,
    };
    log.push(entry);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const raw = await readBody(req);
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      send(401, errorBody(dialect, 401, 'Invalid API Key', 'authentication_error'));
      return;
    }
    if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      send(200, {
        object: 'list',
        data: [
          {
            id: options.model,
            object: 'model',
            created: Math.floor(Date.now() / 1000),
            owned_by: dialect === 'vllm' ? 'vllm' : 'llamacpp',
            ...(dialect === 'vllm'
              ? { root: options.model, parent: null, max_model_len: options.maxModelLen ?? 2048 }
              : { meta: {} }),
          },
        ],
      });
      return;
    }
    const api = path.endsWith('/chat/completions')
      ? 'chat'
      : path.endsWith('/completions')
        ? 'completions'
        : undefined;
    if (req.method !== 'POST' || api === undefined) {
      send(404, errorBody(dialect, 404, `Not Found: ${path}`, 'not_found_error'));
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
      entry.body = body;
    } catch {
      send(400, errorBody(dialect, 400, 'invalid JSON body', 'BadRequestError'));
      return;
    }
    const fault = options.fault?.({ index: generation++, body });
    entry.fault = fault?.type;
    if (fault?.type === 'drop-connection') {
      req.socket.destroy();
      entry.status = 0;
      return;
    }
    if (fault?.type === 'rate-limit') {
      const after = fault.retryAfterSeconds === undefined ? 0.05 : fault.retryAfterSeconds;
      send(
        429,
        errorBody(dialect, 429, 'Rate limit exceeded, retry later', 'rate_limit_error'),
        after === null ? {} : { 'retry-after': String(after) },
      );
      return;
    }
    if (fault?.type === 'server-error') {
      const status = fault.status ?? 500;
      send(
        status,
        errorBody(dialect, status, 'Internal server error (injected)', 'InternalServerError'),
      );
      return;
    }
    let closed = false;
    res.on('close', () => {
      closed = true;
    });
    if (fault?.type === 'delay') await wait(fault.ms);
    if (closed) return;
    let parsed: Parsed;
    try {
      parsed = parseRequest(api, body, options);
    } catch (error) {
      if (error instanceof HttpError) {
        send(
          error.status,
          errorBody(dialect, error.status, error.message, error.type, error.extra),
        );
        return;
      }
      throw error;
    }
    const [group] = await options.sampler.sample({
      ...parsed.request,
      prompts: [parsed.prompt],
      n: parsed.n,
    } as SampleRequest);
    const completions = group ?? [];
    entry.tokensGenerated = completions.reduce((sum, c) => sum + c.tokenIds.length, 0);
    if (closed) return;
    const id = `${api === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID().replace(/-/g, '')}`;
    const choices: ChoiceData[] = completions.map((completion, index) => ({
      index,
      text: completion.text,
      tokens: tokensOf(completion, options.tokenizer, mode),
      finishReason: completion.finishReason === 'length' ? 'length' : 'stop',
    }));
    const usage = {
      prompt_tokens: parsed.promptTokens,
      completion_tokens: entry.tokensGenerated,
      total_tokens: parsed.promptTokens + entry.tokensGenerated,
    };
    if (!parsed.stream) {
      const served = fault?.type === 'fewer-choices' ? choices.slice(0, -1) : choices;
      const json = JSON.stringify({
        ...envelope(dialect, api, id, options.model, false),
        choices: served.map((choice) => wholeChoice(dialect, api, choice, parsed.logprobs)),
        usage,
        ...(dialect === 'vllm' && parsed.logprobs.returnTokenIds && api === 'chat'
          ? {
              prompt_token_ids:
                typeof parsed.prompt === 'string'
                  ? options.tokenizer.encode(parsed.prompt)
                  : parsed.prompt,
            }
          : {}),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (fault?.type === 'malformed-json') {
        res.end(json.slice(0, Math.floor(json.length / 2)));
        return;
      }
      if (fault?.type === 'cut-stream') {
        res.write(json.slice(0, Math.floor(json.length / 2)));
        await wait(5);
        res.destroy();
        return;
      }
      res.end(json);
      entry.choicesServed = served.length;
      entry.tokensSent = served.reduce((sum, choice) => sum + choice.tokens.length, 0);
      return;
    }
    await writeStream(res, entry, {
      dialect,
      api,
      id,
      options,
      parsed,
      choices,
      completions,
      fault,
      isClosed: () => closed,
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(errorBody(dialect, 500, (error as Error).message, 'InternalServerError')),
        );
      } else {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    log,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

async function writeStream(
  res: ServerResponse,
  entry: ServerLogEntry,
  context: {
    dialect: ServedDialect;
    api: 'completions' | 'chat';
    id: string;
    options: OpenAICompatibleServerOptions;
    parsed: Parsed;
    choices: ChoiceData[];
    completions: Completion[];
    fault: ServerFault | undefined;
    isClosed: () => boolean;
  },
): Promise<void> {
  const { dialect, api, id, options, parsed, choices, completions, fault } = context;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let chunks = 0;
  const write = async (choice: Record<string, unknown>): Promise<boolean> => {
    if (context.isClosed()) return false;
    if (fault?.type === 'cut-stream' && chunks >= fault.afterChunks) {
      res.destroy();
      return false;
    }
    chunks += 1;
    const payload = { ...envelope(dialect, api, id, options.model, true), choices: [choice] };
    const ok = res.write(`data: ${JSON.stringify(payload)}\n\n`);
    // let the client read (and maybe close) between tokens, as a generating server would
    if (!ok) await new Promise((resolve) => res.once('drain', resolve));
    if (fault?.type === 'slow-stream') await wait(fault.msPerChunk);
    else await new Promise((resolve) => setImmediate(resolve));
    return !context.isClosed();
  };
  const deltas = completions.map((completion) => textDeltas(completion, options.tokenizer));
  const finished = new Set<number>();
  const length = Math.max(0, ...choices.map((choice) => choice.tokens.length));
  if (api === 'chat') {
    for (const choice of choices) {
      if (
        !(await write(
          chunkChoice(
            dialect,
            api,
            { ...choice, text: '', tokens: [], finishReason: null },
            parsed.logprobs,
            0,
            true,
          ),
        ))
      )
        return;
    }
  }
  const offsets = choices.map(() => 0);
  for (let position = 0; position < length; position++) {
    for (const choice of choices) {
      const token = choice.tokens[position];
      if (token === undefined) continue;
      const text = deltas[choice.index]?.[position] ?? '';
      const last = position === choice.tokens.length - 1;
      const finish = last && dialect === 'vllm' ? choice.finishReason : null;
      const data = chunkChoice(
        dialect,
        api,
        { index: choice.index, text, tokens: [token], finishReason: finish },
        parsed.logprobs,
        offsets[choice.index] ?? 0,
        false,
      );
      offsets[choice.index] =
        (offsets[choice.index] ?? 0) +
        (parsed.logprobs.asTokenIds ? `token_id:${token.id}`.length : token.piece.length);
      if (!(await write(data))) return;
      entry.tokensSent += 1;
      if (finish !== null) finished.add(choice.index);
    }
  }
  for (const choice of choices) {
    if (finished.has(choice.index)) continue;
    // llama-server (and a choice with no tokens) ends with an empty delta carrying the reason
    const data = chunkChoice(
      dialect,
      api,
      { index: choice.index, text: '', tokens: [], finishReason: choice.finishReason },
      parsed.logprobs,
      0,
      false,
    );
    if (!(await write(data))) return;
    finished.add(choice.index);
  }
  entry.choicesServed = finished.size;
  res.end('data: [DONE]\n\n');
}
