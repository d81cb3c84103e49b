import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.ServedModelError';
const symbol = Symbol.for(marker);

/**
 * What went wrong with a served model. Each fault ends a `sample()` call (after the retries the
 * transport allows, for the retryable ones) and none resolves a partial group.
 */
export type ServedModelFault =
  /** The server could not be reached (refused connection, DNS, reset before a response). */
  | 'unreachable'
  /** 401 / 403: missing or wrong `apiKey`. */
  | 'unauthorized'
  /** 404: the server does not serve `model` (or the endpoint does not exist). */
  | 'model-not-found'
  /** 400 whose message says the prompt plus `maxNewTokens` exceed the model's context. */
  | 'context-overflow'
  /** Any other 4xx: the server refused the request (its message is kept). */
  | 'bad-request'
  /** 429 on every attempt (`maxRetries` retries, `Retry-After` honoured). */
  | 'rate-limited'
  /** 5xx on every attempt. */
  | 'server-error'
  /** No response within `timeoutMs` on every attempt. */
  | 'timeout'
  /** The body is not the JSON shape of the endpoint (or not JSON at all). */
  | 'malformed-response'
  /** Fewer (or other) choices than asked for. */
  | 'missing-choices'
  /** A streamed response ended (or broke) before every choice finished. */
  | 'stream-cut'
  /** The request asked for per-token data (top logprobs, a confidence stop, model logprobs) and the server returned no token ids. */
  | 'no-token-ids';

const CODES: Record<ServedModelFault, ErrorCode> = {
  unreachable: ErrorCode.UNAVAILABLE,
  unauthorized: ErrorCode.UNAVAILABLE,
  'model-not-found': ErrorCode.MODEL_LOAD_FAILED,
  'context-overflow': ErrorCode.INVALID_ARGUMENT,
  'bad-request': ErrorCode.INVALID_ARGUMENT,
  'rate-limited': ErrorCode.UNAVAILABLE,
  'server-error': ErrorCode.UNAVAILABLE,
  timeout: ErrorCode.TIMEOUT,
  'malformed-response': ErrorCode.UNAVAILABLE,
  'missing-choices': ErrorCode.SHAPE_MISMATCH,
  'stream-cut': ErrorCode.UNAVAILABLE,
  'no-token-ids': ErrorCode.UNAVAILABLE,
};

/** Which HTTP request failed: enough to find it in the server's log. */
export type ServedRequest = {
  /** `POST /v1/completions` or `POST /v1/chat/completions` (or `GET /v1/models`). */
  endpoint: string;
  model: string;
  /** Index of the prompt in the `sample()` call. */
  promptIndex?: number;
  /** The samples (indices within the prompt's group) this request was for. */
  sampleIndices?: number[];
  seed?: number;
  /** The server's request id (`x-request-id` / the response `id`), when it sent one. */
  requestId?: string;
};

/**
 * A served model failed a request: `fault` says how, `request` says which, `status` and
 * `serverMessage` carry what the server answered, `cause` the transport's error.
 */
export class ServedModelError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly fault: ServedModelFault;
  readonly request: ServedRequest;
  readonly status: number | undefined;
  readonly serverMessage: string | undefined;

  constructor(options: {
    fault: ServedModelFault;
    request: ServedRequest;
    message: string;
    status?: number;
    serverMessage?: string;
    cause?: unknown;
  }) {
    const { request } = options;
    const which = [
      `${request.endpoint} (model '${request.model}'`,
      request.promptIndex === undefined ? '' : `, prompt ${request.promptIndex}`,
      request.sampleIndices === undefined
        ? ''
        : `, samples ${describeIndices(request.sampleIndices)}`,
      request.seed === undefined ? '' : `, seed ${request.seed}`,
      request.requestId === undefined ? '' : `, request id ${request.requestId}`,
      ')',
    ].join('');
    const status = options.status === undefined ? '' : ` [HTTP ${options.status}]`;
    const server = options.serverMessage ? `: ${options.serverMessage}` : '';
    super(
      CODES[options.fault],
      `Served model ${options.fault}${status} on ${which}: ${options.message}${server}`,
      { cause: options.cause },
    );
    this.name = 'ServedModelError';
    this.fault = options.fault;
    this.request = request;
    this.status = options.status;
    this.serverMessage = options.serverMessage;
  }

  /** True when `error` is a {@link ServedModelError} from any copy of `@rlvr/openai`. */
  static override isInstance(error: unknown): error is ServedModelError {
    return RlvrError.hasMarker(error, marker);
  }
}

function describeIndices(indices: readonly number[]): string {
  if (indices.length === 0) return 'none';
  const first = indices[0] as number;
  const last = indices[indices.length - 1] as number;
  const contiguous = indices.every((value, index) => value === first + index);
  return contiguous && indices.length > 1 ? `${first}–${last}` : indices.join(', ');
}
