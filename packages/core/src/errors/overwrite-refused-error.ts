import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.OverwriteRefusedError';
const symbol = Symbol.for(marker);

/**
 * A write would delete, truncate or overwrite something this run did not create (a run folder of
 * another run, a non-checkpoint folder, an input file). Nothing was written. The message names the
 * path and the option that allows it (e.g. `overwrite: true`), when there is one.
 */
export class OverwriteRefusedError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** The path that would have been destroyed. */
  readonly path: string;

  constructor(options: {
    path: string;
    reason: string;
    allowWith?: string;
    functionName?: string;
  }) {
    const where = options.functionName ? `${options.functionName}(): ` : '';
    const allow = options.allowWith ? `; pass ${options.allowWith} to allow it` : '';
    super(
      ErrorCode.WOULD_OVERWRITE,
      `${where}refusing to write '${options.path}': ${options.reason}${allow}`,
    );
    this.path = options.path;
  }

  /** True when `error` is an {@link OverwriteRefusedError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is OverwriteRefusedError {
    return RlvrError.hasMarker(error, marker);
  }
}
