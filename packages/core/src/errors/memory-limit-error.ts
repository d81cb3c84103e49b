import { ErrorCode } from './error-codes.js';
import { RlvrError } from './rlvr-error.js';

const marker = 'rlvr.error.MemoryLimitError';
const symbol = Symbol.for(marker);

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

/**
 * A model or training step would need more memory than the limit. Thrown before any work (at
 * construction, or before a step's first forward), never as a crash mid-step. The message names
 * the estimate by part, the limit and the settings that would fit (`fitsWith`).
 */
export class MemoryLimitError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Estimated bytes by part (weights, gradients, optimizer, activations, ...). */
  readonly parts: Readonly<Record<string, number>>;
  /** The estimated total (bytes). */
  readonly estimateBytes: number;
  /** The limit it exceeds (bytes). */
  readonly limitBytes: number;
  /** Settings that would fit, each a short phrase (e.g. `"lora: { r: 16 }"`). */
  readonly fitsWith: readonly string[];

  constructor(options: {
    what: string;
    parts: Readonly<Record<string, number>>;
    limitBytes: number;
    limitName: string;
    fitsWith: readonly string[];
    functionName?: string;
  }) {
    const where = options.functionName ? `${options.functionName}(): ` : '';
    const estimate = Object.values(options.parts).reduce((sum, bytes) => sum + bytes, 0);
    const parts = Object.entries(options.parts)
      .filter(([, bytes]) => bytes > 0)
      .map(([part, bytes]) => `${part} ${gib(bytes)}`)
      .join(', ');
    const fits =
      options.fitsWith.length > 0
        ? `; it would fit with ${options.fitsWith.join(', or ')}`
        : '; no setting of this trainer would fit: use a smaller model or a larger limit';
    super(
      ErrorCode.MEMORY_LIMIT,
      `${where}${options.what} needs about ${gib(estimate)} (${parts}), over the limit of ${gib(options.limitBytes)} (${options.limitName})${fits}`,
    );
    this.parts = { ...options.parts };
    this.estimateBytes = estimate;
    this.limitBytes = options.limitBytes;
    this.fitsWith = [...options.fitsWith];
  }

  /** True when `error` is a {@link MemoryLimitError} from any copy of `@rlvr/core`. */
  static override isInstance(error: unknown): error is MemoryLimitError {
    return RlvrError.hasMarker(error, marker);
  }
}
