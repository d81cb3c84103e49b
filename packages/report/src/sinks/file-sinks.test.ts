import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MetricRecord } from '@rlvr/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCsvSink, createJsonlSink } from '../index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rlvr-sinks-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const RECORDS: MetricRecord[] = [
  { step: 1, elapsedMs: 812.5, phase: 'train', metrics: { loss: 0.5, 'reward/mean': 0.25 } },
  { step: 2, elapsedMs: 1600, phase: 'train', metrics: { loss: Number.NaN, 'reward/mean': 0.5 } },
];

describe('createJsonlSink', () => {
  it("should write GrpoTrainer's metrics.jsonl line format", async () => {
    const path = join(dir, 'nested', 'metrics.jsonl');
    const sink = await createJsonlSink({ path });
    for (const record of RECORDS) await sink.write(record);
    await sink.close();
    // The line GrpoTrainer's writeRecords appends: `${JSON.stringify(record)}\n`.
    expect(readFileSync(path, 'utf8')).toBe(
      '{"step":1,"elapsedMs":812.5,"phase":"train","metrics":{"loss":0.5,"reward/mean":0.25}}\n' +
        '{"step":2,"elapsedMs":1600,"phase":"train","metrics":{"loss":null,"reward/mean":0.5}}\n',
    );
  });

  it('should refuse an existing file unless told to append or overwrite', async () => {
    const path = join(dir, 'metrics.jsonl');
    writeFileSync(path, '{"step":0,"metrics":{}}'); // torn last line, not ours
    await expect(createJsonlSink({ path })).rejects.toMatchObject({ code: 'WOULD_OVERWRITE' });
    expect(readFileSync(path, 'utf8')).toBe('{"step":0,"metrics":{}}');

    const appending = await createJsonlSink({ path, ifExists: 'append' });
    await appending.write({ step: 1, metrics: { a: 1 } });
    await appending.close();
    expect(readFileSync(path, 'utf8')).toBe(
      '{"step":0,"metrics":{}}\n{"step":1,"metrics":{"a":1}}\n',
    );

    const replacing = await createJsonlSink({ path, ifExists: 'overwrite' });
    expect(readFileSync(path, 'utf8')).toContain('"step":0'); // untouched until the first write
    await replacing.write({ step: 5, metrics: { b: 2 } });
    await replacing.close();
    expect(readFileSync(path, 'utf8')).toBe('{"step":5,"metrics":{"b":2}}\n');
  });

  it('should refuse a file that appeared after the sink was created', async () => {
    const path = join(dir, 'metrics.jsonl');
    const sink = await createJsonlSink({ path });
    writeFileSync(path, 'someone else\n');
    await expect(sink.write(RECORDS[0]!)).rejects.toMatchObject({ code: 'WOULD_OVERWRITE' });
    expect(readFileSync(path, 'utf8')).toBe('someone else\n');
  });

  it('should validate options strictly and records before writing', async () => {
    await expect(
      createJsonlSink({ path: join(dir, 'a'), overwrite: true } as never),
    ).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      message: expect.stringContaining('options.overwrite'),
    });
    await expect(
      createJsonlSink({ path: join(dir, 'a'), ifExists: 'replace' as never }),
    ).rejects.toThrow(/options\.ifExists/);
    await expect(createJsonlSink({ path: '' })).rejects.toThrow(/options\.path/);
    await expect(createJsonlSink({ path: dir })).rejects.toThrow(/folder/);
    const sink = await createJsonlSink({ path: join(dir, 'm.jsonl') });
    await expect(sink.write({ step: 1.5, metrics: {} })).rejects.toThrow(/record\.step/);
    await expect(sink.write({ step: 1, phase: '', metrics: {} })).rejects.toThrow(/record\.phase/);
    await expect(sink.write({ step: 1, metrics: [] as never })).rejects.toThrow(/record\.metrics/);
    await sink.close();
    expect(readdirSync(dir)).toEqual([]);
    await expect(sink.write(RECORDS[0]!)).rejects.toThrow(/closed/);
  });
});

describe('createCsvSink', () => {
  it('should write a header from the metric names and widen it when a new one appears', async () => {
    const path = join(dir, 'metrics.csv');
    const sink = await createCsvSink({ path });
    await sink.write(RECORDS[0]!);
    await sink.write({ step: 2, elapsedMs: 1600, phase: 'train', metrics: { loss: 0.25 } });
    expect(readFileSync(path, 'utf8')).toBe(
      'step,elapsedMs,phase,loss,reward/mean\n1,812.5,train,0.5,0.25\n2,1600,train,0.25,\n',
    );
    await sink.write({
      step: 3,
      phase: 'eval "held-out"',
      metrics: { 'pass@1,k=1': Infinity, loss: -Infinity, kl: Number.NaN },
    });
    await sink.close();
    expect(readFileSync(path, 'utf8')).toBe(
      'step,elapsedMs,phase,loss,reward/mean,"pass@1,k=1",kl\n' +
        '1,812.5,train,0.5,0.25,,\n' +
        '2,1600,train,0.25,,,\n' +
        '3,,"eval ""held-out""",-inf,,inf,NaN\n',
    );
    expect(readdirSync(dir)).toEqual(['metrics.csv']); // no temporary file left
  });

  it('should never rewrite a file it did not create', async () => {
    const path = join(dir, 'metrics.csv');
    writeFileSync(path, 'step,loss\n1,2\n');
    await expect(createCsvSink({ path })).rejects.toMatchObject({ code: 'WOULD_OVERWRITE' });
    await expect(createCsvSink({ path, ifExists: 'append' as never })).rejects.toThrow(
      /options\.ifExists/,
    );
    expect(readFileSync(path, 'utf8')).toBe('step,loss\n1,2\n');
    const sink = await createCsvSink({ path, ifExists: 'overwrite' });
    await sink.write({ step: 1, metrics: { a: 1 } });
    await sink.write({ step: 2, metrics: { a: 2, b: 3 } });
    await sink.close();
    expect(readFileSync(path, 'utf8')).toBe('step,elapsedMs,phase,a,b\n1,,,1,\n2,,,2,3\n');
  });
});
