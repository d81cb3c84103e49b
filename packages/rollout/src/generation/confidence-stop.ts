import type { Completion, ConfidenceStop, TopLogprob } from '@rlvr/core';
import type { SequenceTracker } from './stopping-criteria.js';

/** DeepConf's token confidence: `−mean` of the position's top-k logprobs (≥ 0). */
export function tokenConfidence(top: readonly TopLogprob[]): number {
  let sum = 0;
  for (const entry of top) sum += entry.logprob;
  return top.length === 0 ? 0 : -sum / top.length;
}

/**
 * The sliding window of a {@link ConfidenceStop}: `push` adds a token's confidence and says
 * whether the mean over the last `windowSize` tokens is below `threshold` (never before the window
 * is full). The window sum is recomputed from its entries (no running-sum drift).
 */
export class ConfidenceWindow {
  private readonly values: Float64Array;
  private count = 0;

  constructor(private readonly stop: ConfidenceStop) {
    this.values = new Float64Array(stop.windowSize);
  }

  /** Adds one token's confidence; true when the full window's mean is `< threshold`. */
  push(confidence: number): boolean {
    const size = this.stop.windowSize;
    this.values[this.count % size] = confidence;
    this.count++;
    if (this.count < size) return false;
    let sum = 0;
    for (let index = 0; index < size; index++) sum += this.values[index]!;
    return sum / size < this.stop.threshold;
  }
}

/**
 * Per-job top logprobs and confidence windows of one request (both engines): `push` records a
 * token's top logprobs after its tracker saw the token, and ends the sequence with
 * `finishReason: 'confidence'` when the window falls below the threshold and no other rule ended
 * it at that token. @internal
 */
export class TopLogprobRecorder {
  private readonly tops: TopLogprob[][][];
  private readonly windows: (ConfidenceWindow | undefined)[];

  constructor(jobCount: number, confidenceStop: ConfidenceStop | undefined) {
    this.tops = Array.from({ length: jobCount }, () => []);
    this.windows = Array.from({ length: jobCount }, () =>
      confidenceStop ? new ConfidenceWindow(confidenceStop) : undefined,
    );
  }

  push(jobIndex: number, tracker: SequenceTracker, top: TopLogprob[]): void {
    this.tops[jobIndex]!.push(top);
    const low = this.windows[jobIndex]?.push(tokenConfidence(top)) ?? false;
    if (low && !tracker.finished) tracker.finishReason = 'confidence';
  }

  /** Sets `completion.topLogprobs` of job `jobIndex`. */
  attach(jobIndex: number, completion: Completion): void {
    completion.topLogprobs = this.tops[jobIndex]!;
  }
}
