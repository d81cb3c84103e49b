import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.QueueUnavailableError';
const symbol = Symbol.for(marker);

/** Why the Redis behind the queue cannot be used. */
export type QueueUnavailableReason = 'unreachable' | 'eviction-policy' | 'closed';

/**
 * The Redis server behind a queue cannot be used (code `UNAVAILABLE`): it is unreachable, or its
 * `maxmemory-policy` is not `noeviction` (Redis would silently drop queued jobs under memory
 * pressure), or the sampler/worker was closed.
 */
export class QueueUnavailableError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly reason: QueueUnavailableReason;
  /** The Redis URL (password removed). */
  readonly url: string;

  constructor(options: {
    reason: QueueUnavailableReason;
    url: string;
    detail: string;
    cause?: unknown;
  }) {
    super(ErrorCode.UNAVAILABLE, `Redis at ${options.url} cannot be used: ${options.detail}`, {
      cause: options.cause,
    });
    this.reason = options.reason;
    this.url = options.url;
  }

  /** True when `error` is a {@link QueueUnavailableError} from any copy of `@rlvr/distributed`. */
  static override isInstance(error: unknown): error is QueueUnavailableError {
    return RlvrError.hasMarker(error, marker);
  }
}
