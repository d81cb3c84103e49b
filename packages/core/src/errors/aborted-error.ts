import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.AbortedError';
const symbol = Symbol.for(marker);

/** An operation was cancelled through an `AbortSignal`; `cause` holds the signal's reason. */
export class AbortedError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;

  constructor(options: { operation: string; cause?: unknown }) {
    super(ErrorCode.ABORTED, `${options.operation} was aborted`, { cause: options.cause });
  }

  /** True when `error` is an {@link AbortedError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is AbortedError {
    return RlvrError.hasMarker(error, marker);
  }
}
