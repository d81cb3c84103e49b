import { ErrorCode } from './error-codes.js';
import { describeValue } from './invalid-argument-error.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.ResumeMismatchError';
const symbol = Symbol.for(marker);

/**
 * A checkpoint (or a reused artefact such as a trace file) was made with settings that change the
 * math and differ from the current ones. The message names the first differing field and both
 * values; `fields` lists every differing field.
 */
export class ResumeMismatchError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Dotted names of the fields that differ. */
  readonly fields: string[];

  constructor(options: {
    what: string;
    differences: readonly { field: string; saved: unknown; current: unknown }[];
    allowWith?: string;
    functionName?: string;
  }) {
    const where = options.functionName ? `${options.functionName}(): ` : '';
    const shown = options.differences
      .slice(0, 3)
      .map((d) => `'${d.field}' was ${describeValue(d.saved)}, now ${describeValue(d.current)}`)
      .join('; ');
    const more =
      options.differences.length > 3 ? ` (and ${options.differences.length - 3} more)` : '';
    const allow = options.allowWith ? `; pass ${options.allowWith} to accept it` : '';
    super(
      ErrorCode.RESUME_MISMATCH,
      `${where}${options.what} was made with different settings: ${shown}${more}${allow}`,
    );
    this.fields = options.differences.map((d) => d.field);
  }

  /** True when `error` is a {@link ResumeMismatchError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is ResumeMismatchError {
    return RlvrError.hasMarker(error, marker);
  }
}
