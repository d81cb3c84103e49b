import { InvalidArgumentError, type MetricRecord } from '@rlvr/core';
import type { MetricsSink } from './metrics-sink.js';
import { assertSink } from './validate-record.js';

async function settleAll(
  sinks: readonly MetricsSink[],
  action: (sink: MetricsSink) => Promise<void>,
): Promise<void> {
  const results = await Promise.allSettled(sinks.map((sink) => action(sink)));
  const failures = results.flatMap((result, index) =>
    result.status === 'rejected' ? [{ sink: sinks[index]!, reason: result.reason as unknown }] : [],
  );
  if (failures.length === 1) throw failures[0]!.reason;
  if (failures.length > 1) {
    throw new AggregateError(
      failures.map((failure) => failure.reason),
      `${failures.length} metrics sinks failed: ${failures.map((failure) => failure.sink.name).join(', ')}`,
    );
  }
}

/**
 * One sink that sends every call to all of `sinks`. Each call reaches every sink even when one
 * of them fails; the failure (or an `AggregateError` of several) is thrown after all finished.
 *
 * @example
 * ```ts
 * const sink = fanOut([
 *   await createJsonlSink({ path: 'run/metrics.jsonl' }),
 *   await createTensorBoardSink({ logDir: 'run/tb' }),
 *   createConsoleSink(),
 * ]);
 * await sink.write({ step: 1, phase: 'train', metrics: { loss: 0.5 } });
 * await sink.close();
 * ```
 * @throws {InvalidArgumentError} when `sinks` is not an array of sinks.
 */
export function fanOut(sinks: readonly MetricsSink[]): MetricsSink {
  if (!Array.isArray(sinks)) {
    throw new InvalidArgumentError({
      parameter: 'sinks',
      functionName: 'fanOut',
      value: sinks,
      expected: 'an array of MetricsSink',
    });
  }
  sinks.forEach((sink, index) => {
    assertSink(sink, `sinks[${index}]`, 'fanOut');
  });
  const all = [...sinks];
  return {
    name: `fanOut(${all.map((sink) => sink.name).join(', ')})`,
    write: (record: MetricRecord) => settleAll(all, (sink) => sink.write(record)),
    flush: () => settleAll(all, (sink) => sink.flush()),
    close: () => settleAll(all, (sink) => sink.close()),
  };
}
