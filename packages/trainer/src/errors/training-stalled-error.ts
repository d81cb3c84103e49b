import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.TrainingStalledError';
const symbol = Symbol.for(marker);

/**
 * Training cannot make progress: `count` updates in a row were skipped because the loss, the
 * gradients or the logprobs were NaN/±Infinity (`onNonFinite: 'skip'` reached its
 * `maxConsecutiveSkips`). The message names the count, the last non-finite quantity and the
 * likely causes.
 */
export class TrainingStalledError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Consecutive skipped updates when the run stopped. */
  readonly count: number;
  /** What was non-finite in the last skipped update (e.g. `loss`, `gradients`, `logprobs`). */
  readonly lastCause: string;

  constructor(options: { count: number; lastCause: string; functionName?: string }) {
    const where = options.functionName ? `${options.functionName}(): ` : '';
    super(
      ErrorCode.TRAINING_STALLED,
      `${where}training stalled: ${options.count} consecutive updates were skipped because of ` +
        `non-finite values (last: ${options.lastCause}). Likely causes: NaN/Inf model weights ` +
        '(a diverged run or a broken checkpoint), a learning rate that is too high, or a loss ' +
        "function returning NaN. Use onNonFinite: 'error' to stop at the first one, or raise " +
        'maxConsecutiveSkips.',
    );
    this.count = options.count;
    this.lastCause = options.lastCause;
  }

  /** True when `error` is a {@link TrainingStalledError} from any copy of `@rlvr/trainer`. */
  static override isInstance(error: unknown): error is TrainingStalledError {
    return RlvrError.hasMarker(error, marker);
  }
}
