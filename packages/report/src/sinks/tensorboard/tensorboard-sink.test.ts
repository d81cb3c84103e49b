import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTensorBoardSink } from '../../index.js';

// An independent CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), table-driven, so the
// writer's framing is not checked with its own code.
const TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
function masked(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

/** Splits a TFRecord file, checking both masked CRCs of every record. */
function readRecords(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const length = Number(view.getBigUint64(offset, true));
    expect(view.getUint32(offset + 8, true)).toBe(masked(bytes.subarray(offset, offset + 8)));
    const data = bytes.subarray(offset + 12, offset + 12 + length);
    expect(view.getUint32(offset + 12 + length, true)).toBe(masked(data));
    records.push(data);
    offset += 12 + length + 4;
  }
  expect(offset).toBe(bytes.length);
  return records;
}

const root = protobuf.loadSync([
  new URL('./__fixtures__/event.proto', import.meta.url).pathname,
  new URL('./__fixtures__/summary.proto', import.meta.url).pathname,
]);
const Event = root.lookupType('tensorflow.Event');

type DecodedEvent = {
  wallTime: number;
  step?: number;
  fileVersion?: string;
  summary?: { value: { tag: string; simpleValue: number }[] };
};
const decode = (data: Uint8Array) =>
  Event.toObject(Event.decode(data), { longs: Number, defaults: false }) as DecodedEvent;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rlvr-tb-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('createTensorBoardSink', () => {
  it('the test CRC-32C matches the known vector crc32c("123456789") = 0xe3069283', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
  });

  it('should write an event file that protobufjs decodes with the TensorFlow protos', async () => {
    const before = Date.now() / 1000;
    const sink = await createTensorBoardSink({ logDir: join(dir, 'tb'), hostname: 'box-1' });
    await sink.write({
      step: 1,
      elapsedMs: 10,
      phase: 'train',
      metrics: { loss: 0.5, 'reward/mean': 0.25 },
    });
    await sink.write({ step: 2, metrics: { loss: -1.5e-7, kl: Number.NaN } });
    await sink.write({ step: 3_000_000_000, phase: 'eval', metrics: { 'pass@1': 1 / 3 } });
    await sink.close();
    const files = readdirSync(join(dir, 'tb'));
    expect(files).toHaveLength(1);
    const seconds = Number(/^events\.out\.tfevents\.(\d+)\.box-1$/.exec(files[0]!)?.[1]);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor(before));
    expect(seconds).toBeLessThanOrEqual(Date.now() / 1000);

    const events = readRecords(readFileSync(join(dir, 'tb', files[0]!))).map(decode);
    expect(events).toHaveLength(4);
    expect(events[0]!.fileVersion).toBe('brain.Event:2');
    expect(events[0]!.wallTime).toBeGreaterThanOrEqual(before);
    expect(events[1]).toMatchObject({
      step: 1,
      summary: {
        value: [
          { tag: 'train/loss', simpleValue: 0.5 },
          { tag: 'train/reward/mean', simpleValue: 0.25 },
        ],
      },
    });
    const [loss, kl] = events[2]!.summary!.value;
    expect(events[2]!.step).toBe(2);
    expect(loss).toEqual({ tag: 'loss', simpleValue: Math.fround(-1.5e-7) });
    expect(kl!.tag).toBe('kl');
    expect(kl!.simpleValue).toBeNaN();
    expect(events[3]!.step).toBe(3_000_000_000);
    expect(events[3]!.summary!.value[0]).toEqual({
      tag: 'eval/pass@1',
      simpleValue: Math.fround(1 / 3),
    });
    for (const event of events.slice(1))
      expect(event.wallTime).toBeGreaterThanOrEqual(events[0]!.wallTime);
  });

  it('should never touch an existing event file: a taken name gets a suffix', async () => {
    const seconds = Math.floor(Date.now() / 1000);
    // Files another writer made, under the names this sink would pick in this and the next second.
    for (const s of [seconds, seconds + 1]) {
      writeFileSync(join(dir, `events.out.tfevents.${s}.box`), 'not ours');
    }
    const sink = await createTensorBoardSink({ logDir: dir, hostname: 'box' });
    await sink.write({ step: 1, metrics: { loss: 1 } });
    await sink.close();
    const files = readdirSync(dir).sort();
    expect(files).toHaveLength(3);
    for (const s of [seconds, seconds + 1]) {
      expect(readFileSync(join(dir, `events.out.tfevents.${s}.box`), 'utf8')).toBe('not ours');
    }
    const ours = files.find((name) => name.endsWith('.box.1'))!;
    expect(readRecords(readFileSync(join(dir, ours))).map(decode)[1]!.summary!.value[0]!.tag).toBe(
      'loss',
    );
  });

  it('should create nothing until the first write, and reject writes after close', async () => {
    const sink = await createTensorBoardSink({ logDir: join(dir, 'later') });
    await sink.close();
    expect(readdirSync(dir)).toEqual([]);
    await expect(sink.write({ step: 1, metrics: {} })).rejects.toThrow(/closed/);
  });

  it('should reject unknown options, a file as logDir and invalid records', async () => {
    await expect(createTensorBoardSink({ logdir: dir } as never)).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      message: expect.stringContaining("did you mean 'logDir'?"),
    });
    writeFileSync(join(dir, 'file'), '');
    await expect(createTensorBoardSink({ logDir: join(dir, 'file') })).rejects.toThrow(/a folder/);
    mkdirSync(join(dir, 'tb'));
    const sink = await createTensorBoardSink({ logDir: join(dir, 'tb') });
    await expect(sink.write({ step: -1, metrics: {} })).rejects.toThrow(/record\.step/);
    await expect(sink.write({ step: 1, metrics: { loss: '1' as never } })).rejects.toThrow(
      /record\.metrics\['loss'\]/,
    );
    await sink.close();
    expect(readdirSync(join(dir, 'tb'))).toEqual([]);
  });
});
