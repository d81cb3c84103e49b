import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.UnsupportedSpecificationError';
const symbol = Symbol.for(marker);

/** An implementation (e.g. a `Sampler`) declares a `specificationVersion` we do not support. */
export class UnsupportedSpecificationError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly parameter: string;
  readonly supported: readonly string[];
  readonly actual: unknown;

  constructor(options: { parameter: string; supported: readonly string[]; actual: unknown }) {
    super(
      ErrorCode.UNSUPPORTED_SPECIFICATION,
      `Unsupported specification for parameter '${options.parameter}': expected specificationVersion ${options.supported.map((v) => `'${v}'`).join(' or ')}, got ${JSON.stringify(options.actual) ?? 'undefined'}`,
    );
    this.parameter = options.parameter;
    this.supported = options.supported;
    this.actual = options.actual;
  }

  /** True when `error` is an {@link UnsupportedSpecificationError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is UnsupportedSpecificationError {
    return RlvrError.hasMarker(error, marker);
  }
}
