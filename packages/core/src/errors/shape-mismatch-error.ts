import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.ShapeMismatchError';
const symbol = Symbol.for(marker);

/** Arrays that must line up do not: names the parameter, the expected and the actual shape. */
export class ShapeMismatchError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly parameter: string;
  readonly expected: string;
  readonly actual: string;

  constructor(options: {
    parameter: string;
    expected: string;
    actual: string;
    functionName?: string;
  }) {
    const where = options.functionName ? ` of ${options.functionName}()` : '';
    super(
      ErrorCode.SHAPE_MISMATCH,
      `Shape mismatch for parameter '${options.parameter}'${where}: expected ${options.expected}, got ${options.actual}`,
    );
    this.parameter = options.parameter;
    this.expected = options.expected;
    this.actual = options.actual;
  }

  /** True when `error` is a {@link ShapeMismatchError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is ShapeMismatchError {
    return RlvrError.hasMarker(error, marker);
  }
}
