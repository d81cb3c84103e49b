import type { ErrorCode } from './error-codes.js';

const marker = 'rlvr.error';
const symbol = Symbol.for(marker);

/**
 * Base class of every error thrown by rlvr packages.
 *
 * Use {@link RlvrError.isInstance} (not `instanceof`) to recognize it: the check uses a global
 * `Symbol.for` marker, so it works even when two copies of `@rlvr/core` are installed.
 *
 * @example
 * ```ts
 * try { groupAdvantages(rewards, { groupSize: 1 }); }
 * catch (error) { if (RlvrError.isInstance(error) && error.code === 'INVALID_ARGUMENT') { … } }
 * ```
 */
export class RlvrError extends Error {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Stable machine-readable code; see {@link ErrorCode}. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = `RlvrError[${code}]`;
  }

  /** True when `error` is an {@link RlvrError} from any copy of `@rlvr/core`. */
  static isInstance(error: unknown): error is RlvrError {
    return RlvrError.hasMarker(error, marker);
  }

  /** True when `error` carries the global marker `markerName` (used by subclasses). */
  protected static hasMarker(error: unknown, markerName: string): boolean {
    const markerSymbol = Symbol.for(markerName);
    return (
      error != null &&
      typeof error === 'object' &&
      markerSymbol in error &&
      (error as Record<symbol, unknown>)[markerSymbol] === true
    );
  }
}
