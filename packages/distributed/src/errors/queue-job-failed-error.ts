import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.QueueJobFailedError';
const symbol = Symbol.for(marker);

/**
 * A queued job ended in BullMQ's failed set after its last attempt (code `UNAVAILABLE`): the
 * message names the job id and the worker's reason (`failedReason`).
 */
export class QueueJobFailedError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly jobId: string;
  readonly failedReason: string;
  readonly queue: string;

  constructor(options: { queue: string; jobId: string; failedReason: string; cause?: unknown }) {
    super(
      ErrorCode.UNAVAILABLE,
      `Job '${options.jobId}' of queue '${options.queue}' failed: ${options.failedReason}`,
      { cause: options.cause },
    );
    this.jobId = options.jobId;
    this.failedReason = options.failedReason;
    this.queue = options.queue;
  }

  /** True when `error` is a {@link QueueJobFailedError} from any copy of `@rlvr/distributed`. */
  static override isInstance(error: unknown): error is QueueJobFailedError {
    return RlvrError.hasMarker(error, marker);
  }
}
