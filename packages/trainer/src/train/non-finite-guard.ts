import { NonFiniteError } from '@rlvr/core';
import { TrainingStalledError } from '../errors/training-stalled-error.js';

/**
 * What happens to an update whose loss, gradients or logprobs are not finite: `error` rethrows the
 * {@link NonFiniteError}; `skip` counts it and, at `maxConsecutiveSkips` skips in a row (0: never),
 * throws a {@link TrainingStalledError}. An applied update resets the run of skips. @internal
 */
export class NonFiniteGuard {
  /** Updates skipped so far. */
  skippedSteps = 0;
  /** Skipped updates since the last applied one. */
  consecutiveSkips = 0;
  private readonly mode: 'error' | 'skip';
  private readonly maxConsecutiveSkips: number;

  constructor(mode: 'error' | 'skip', maxConsecutiveSkips: number) {
    this.mode = mode;
    this.maxConsecutiveSkips = maxConsecutiveSkips;
  }

  /** True when non-finite values are returned to the caller instead of thrown. */
  get skips(): boolean {
    return this.mode === 'skip';
  }

  /** Records a non-finite update; throws `error` (mode `error`) or a stall at the limit. */
  skip(error: NonFiniteError, functionName: string): void {
    if (this.mode === 'error') throw error;
    this.skippedSteps += 1;
    this.consecutiveSkips += 1;
    if (this.maxConsecutiveSkips > 0 && this.consecutiveSkips >= this.maxConsecutiveSkips) {
      throw new TrainingStalledError({
        count: this.consecutiveSkips,
        lastCause: `${error.parameter} was ${String(error.value)}`,
        functionName,
      });
    }
  }

  /** Records an applied update. */
  applied(): void {
    this.consecutiveSkips = 0;
  }

  /** Runs `attempt`; a {@link NonFiniteError} from it is {@link skip}ped and `onSkip` returned. */
  guard<T>(attempt: () => T, onSkip: () => T, functionName: string): T {
    try {
      return attempt();
    } catch (error) {
      if (!NonFiniteError.isInstance(error)) throw error;
      this.skip(error, functionName);
      return onSkip();
    }
  }
}
