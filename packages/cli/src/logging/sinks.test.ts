import type { MetricRecord } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { progressEnabled, startProgress } from './progress.js';
import { parseReportTo, sequentialWriter } from './sinks.js';

describe('sequentialWriter', () => {
  it('should write records one at a time in order and report the first failure at the end', async () => {
    const seen: number[] = [];
    let active = 0;
    const writer = sequentialWriter({
      name: 'test',
      async write(record: MetricRecord) {
        active++;
        expect(active).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 5 - record.step));
        seen.push(record.step);
        active--;
        if (record.step === 2) throw new Error('disk full');
      },
      async flush() {},
      async close() {},
    });
    for (const step of [1, 2, 3]) writer.push({ step, metrics: { loss: step } });
    await expect(writer.done()).rejects.toThrow('disk full');
    expect(seen).toEqual([1, 2]);
  });
});

describe('parseReportTo', () => {
  it("should take TRL's report_to values as a list or a comma-separated string", () => {
    expect(parseReportTo('jsonl, csv,tensorboard', 'x.yaml')).toEqual([
      'jsonl',
      'csv',
      'tensorboard',
    ]);
    expect(parseReportTo(['none'], 'x.yaml')).toEqual([]);
    expect(() => parseReportTo(['wandb'], 'x.yaml')).toThrow(
      /reportTo' \(in x\.yaml\): unknown sink 'wandb'/,
    );
  });
});

describe('progress', () => {
  it('should draw no bar when quiet, in CI or when stderr is not a terminal', () => {
    expect(progressEnabled(true)).toBe(false);
    const isTTY = process.stderr.isTTY;
    const ci = process.env.CI;
    try {
      process.stderr.isTTY = true;
      delete process.env.CI;
      expect(progressEnabled(false)).toBe(true);
      process.env.CI = 'true';
      expect(progressEnabled(false)).toBe(false);
    } finally {
      process.stderr.isTTY = isTTY;
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
    }
    const bar = startProgress('x', 10, false);
    bar.update(5, 'ok');
    bar.stop();
  });
});
