import type { MetricRecord } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { createConsoleSink, fanOut, formatMetricLine, type MetricsSink } from '../index.js';

function memorySink(
  name: string,
  fail = false,
): MetricsSink & { seen: MetricRecord[]; closed: boolean } {
  const sink = {
    name,
    seen: [] as MetricRecord[],
    closed: false,
    async write(record: MetricRecord) {
      if (fail) throw new Error(`${name} failed`);
      sink.seen.push(record);
    },
    async flush() {},
    async close() {
      sink.closed = true;
    },
  };
  return sink;
}

describe('fanOut', () => {
  it('should send every call to every sink, even when one fails', async () => {
    const [a, b, c] = [memorySink('a'), memorySink('b', true), memorySink('c')];
    const sink = fanOut([a, b, c]);
    await expect(sink.write({ step: 1, metrics: { loss: 1 } })).rejects.toThrow('b failed');
    expect(a.seen).toHaveLength(1);
    expect(c.seen).toHaveLength(1);
    await sink.close();
    expect([a.closed, b.closed, c.closed]).toEqual([true, true, true]);
    const two = fanOut([memorySink('x', true), memorySink('y', true)]);
    await expect(two.write({ step: 1, metrics: {} })).rejects.toThrow(
      /2 metrics sinks failed: x, y/,
    );
  });

  it('should reject what is not a sink', () => {
    expect(() => fanOut([{ write() {} } as never])).toThrow(/sinks\[0\]/);
    expect(() => fanOut('jsonl' as never)).toThrow(/sinks/);
  });
});

describe('createConsoleSink', () => {
  it('should print one compact line per record, common metrics first', async () => {
    const lines: string[] = [];
    const sink = createConsoleSink({ print: (line) => lines.push(line), every: 2, maxMetrics: 3 });
    const metrics = { zeta: 3, kl: 0.00214, 'reward/mean': 0.5625, loss: 0.013124 };
    for (const step of [1, 2, 3])
      await sink.write({ step, elapsedMs: 4200 * step, phase: 'train', metrics });
    expect(lines).toEqual([
      '[train] step 1 (4.2s) loss=0.01312 reward/mean=0.5625 kl=0.00214',
      '[train] step 2 (8.4s) loss=0.01312 reward/mean=0.5625 kl=0.00214',
    ]);
    expect(
      formatMetricLine({ step: 7, elapsedMs: 3_725_000, metrics: { x: 1e-9, y: Number.NaN } }),
    ).toBe('step 7 (1h02m) x=1.00e-9 y=NaN');
    expect(
      formatMetricLine({ step: 1, metrics: { a: 1, b: 2 } }, { metrics: ['b', 'missing'] }),
    ).toBe('step 1 b=2');
  });

  it('should validate its options', () => {
    expect(() => createConsoleSink({ every: 0 })).toThrow(/options\.every/);
    expect(() => createConsoleSink({ metric: ['loss'] } as never)).toThrow(
      /did you mean 'metrics'/,
    );
  });
});
