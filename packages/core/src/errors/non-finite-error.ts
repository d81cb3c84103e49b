import { ErrorCode } from './error-codes.js';
import { describeValue } from './invalid-argument-error.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.NonFiniteError';
const symbol = Symbol.for(marker);

/**
 * A number that must be finite (a reward, a logprob, a weight) is NaN or ±Infinity.
 * Names the parameter and the flat index of the first bad element.
 */
export class NonFiniteError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly parameter: string;
  /** Index of the first non-finite element (`[sequence, token]` for ragged input). */
  readonly index: number | readonly [number, number];
  readonly value: number;

  constructor(options: {
    parameter: string;
    index: number | readonly [number, number];
    value: number;
    functionName?: string;
  }) {
    const where = options.functionName ? ` of ${options.functionName}()` : '';
    const at =
      typeof options.index === 'number'
        ? `[${options.index}]`
        : `[${options.index[0]}][${options.index[1]}]`;
    super(
      ErrorCode.NON_FINITE,
      `Invalid argument for parameter '${options.parameter}'${where}: expected finite numbers, got ${describeValue(options.value)} at ${options.parameter}${at}`,
    );
    this.parameter = options.parameter;
    this.index = options.index;
    this.value = options.value;
  }

  /** True when `error` is a {@link NonFiniteError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is NonFiniteError {
    return RlvrError.hasMarker(error, marker);
  }
}
