import type { MetricRecord } from '@rlvr/core';

/**
 * Where training metrics go. Every sink takes the same {@link MetricRecord} that GrpoTrainer's
 * `onStep` receives and writes to `metrics.jsonl` (`{ step, elapsedMs?, phase?, metrics }`), so a
 * caller can send one record to any mix of sinks with {@link fanOut}.
 *
 * Contract:
 * - `write` records in step order; each call's effect is visible (written to the OS) when its
 *   promise resolves. A record is validated before anything is written: an invalid one rejects
 *   with `InvalidArgumentError` and leaves the output as it was.
 * - `flush` makes everything written so far durable (fsync for file sinks).
 * - `close` flushes and releases the sink; it is idempotent, and `write` after `close` rejects.
 * - File sinks refuse (`OverwriteRefusedError`, code `WOULD_OVERWRITE`) to replace or truncate a
 *   file they did not create in this run unless the caller passed `ifExists: 'overwrite'`; that
 *   check happens when the sink is created, before anything is written. Files are created on the
 *   first `write`, so a sink that never receives a record leaves nothing behind.
 */
export interface MetricsSink {
  /** What the sink writes, for messages (`jsonl:/runs/a/metrics.jsonl`, `console`, …). */
  readonly name: string;
  /** Writes one record. */
  write(record: MetricRecord): Promise<void>;
  /** Makes everything written so far durable. */
  flush(): Promise<void>;
  /** Flushes and releases the sink (idempotent). */
  close(): Promise<void>;
}

/**
 * What a file sink does when its file already exists when the sink is created:
 * - `'refuse'` (default): throw `OverwriteRefusedError` (nothing is touched);
 * - `'append'`: add records after the existing content (resuming a run; JSONL only);
 * - `'overwrite'`: replace the file on the first write.
 */
export type IfExists = 'refuse' | 'append' | 'overwrite';

/** The values {@link IfExists} may take. */
export const IF_EXISTS_VALUES: readonly IfExists[] = ['refuse', 'append', 'overwrite'];
