import { InvalidArgumentError, type MetricRecord } from '@rlvr/core';
import type { MetricsSink } from './metrics-sink.js';

/**
 * Checks a record before any sink writes it: `step` a non-negative safe integer, `elapsedMs`
 * (when present) a finite number ≥ 0, `phase` (when present) a non-empty string, `metrics` an
 * object of numbers (NaN and ±Infinity are allowed: a diverged loss is worth logging).
 * @internal
 */
export function validateRecord(record: unknown, functionName: string): MetricRecord {
  const fail = (parameter: string, value: unknown, expected: string): never => {
    throw new InvalidArgumentError({ parameter, functionName, value, expected });
  };
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    fail('record', record, 'a MetricRecord { step, elapsedMs?, phase?, metrics }');
  }
  const { step, elapsedMs, phase, metrics } = record as Partial<MetricRecord>;
  if (typeof step !== 'number' || !Number.isSafeInteger(step) || step < 0) {
    fail('record.step', step, 'a non-negative integer');
  }
  if (elapsedMs !== undefined && !(typeof elapsedMs === 'number' && elapsedMs >= 0)) {
    fail('record.elapsedMs', elapsedMs, 'a finite number >= 0 (milliseconds), or undefined');
  }
  if (elapsedMs !== undefined && !Number.isFinite(elapsedMs)) {
    fail('record.elapsedMs', elapsedMs, 'a finite number >= 0 (milliseconds), or undefined');
  }
  if (phase !== undefined && (typeof phase !== 'string' || phase === '')) {
    fail('record.phase', phase, 'a non-empty string, or undefined');
  }
  if (metrics === null || typeof metrics !== 'object' || Array.isArray(metrics)) {
    fail('record.metrics', metrics, 'an object mapping metric names to numbers');
  }
  for (const [key, value] of Object.entries(metrics as object)) {
    if (key === '') fail('record.metrics', metrics, 'metric names that are non-empty strings');
    if (typeof value !== 'number') fail(`record.metrics['${key}']`, value, 'a number');
  }
  return record as MetricRecord;
}

/** Checks that `value` looks like a {@link MetricsSink}. @internal */
export function assertSink(value: unknown, parameter: string, functionName: string): void {
  const sink = value as Partial<MetricsSink> | null;
  if (
    sink === null ||
    typeof sink !== 'object' ||
    typeof sink.write !== 'function' ||
    typeof sink.flush !== 'function' ||
    typeof sink.close !== 'function'
  ) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'a MetricsSink (an object with write, flush and close)',
    });
  }
}
