import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.InvalidArgumentError';
const symbol = Symbol.for(marker);

/** Describes a value for an error message: short, JSON-like, never throws. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  }
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    return `a ${value.constructor.name} of length ${(value as unknown as ArrayLike<unknown>).length}`;
  }
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

/**
 * An argument of a public function was missing, of the wrong type, or out of range.
 * The message names the parameter, the function, what was expected and what was received:
 * `Invalid argument for parameter 'groupSize' of groupAdvantages(): expected an integer >= 2, got 1`.
 */
export class InvalidArgumentError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Name of the offending parameter (a dotted path for nested options, e.g. `options.groupSize`). */
  readonly parameter: string;
  /** The value received. */
  readonly value: unknown;

  constructor(options: {
    parameter: string;
    value: unknown;
    expected: string;
    functionName?: string;
    cause?: unknown;
    code?: ErrorCode;
  }) {
    const where = options.functionName ? ` of ${options.functionName}()` : '';
    super(
      options.code ?? ErrorCode.INVALID_ARGUMENT,
      `Invalid argument for parameter '${options.parameter}'${where}: expected ${options.expected}, got ${describeValue(options.value)}`,
      { cause: options.cause },
    );
    this.parameter = options.parameter;
    this.value = options.value;
  }

  /** True when `error` is an {@link InvalidArgumentError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is InvalidArgumentError {
    return RlvrError.hasMarker(error, marker);
  }
}
