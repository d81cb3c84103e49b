import { existsSync, statSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import {
  ErrorCode,
  InvalidArgumentError,
  type MetricRecord,
  OverwriteRefusedError,
  RlvrError,
  validateOptions,
} from '@rlvr/core';
import { validatePath } from '../file-options.js';
import type { MetricsSink } from '../metrics-sink.js';
import { OwnedFile } from '../owned-file.js';
import { validateRecord } from '../validate-record.js';
import { encodeFileVersionEvent, encodeScalarsEvent } from './event-proto.js';
import { tfRecord } from './tfrecord.js';

/** Options of {@link createTensorBoardSink}. */
export type TensorBoardSinkOptions = {
  /** The folder to write the event file into (`tensorboard --logdir` it); created when needed. */
  logDir: string;
  /** The host name in the file name. Default `os.hostname()`. */
  hostname?: string;
};

const FN = 'createTensorBoardSink';
const KNOWN = ['logDir', 'hostname'] as const;

/** A file name no other file has: `events.out.tfevents.<s>.<host>`, then `.1`, `.2`, … */
function freeName(logDir: string, seconds: number, host: string): string {
  const base = `events.out.tfevents.${seconds}.${host}`;
  let name = base;
  for (let n = 1; existsSync(join(logDir, name)); n++) name = `${base}.${n}`;
  return join(logDir, name);
}

function parseOptions(options: unknown): { logDir: string; host: string } {
  if (options === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName: FN,
      value: options,
      expected: 'an options object with a logDir',
    });
  }
  const checked = validateOptions<TensorBoardSinkOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: KNOWN,
  });
  const logDir = validatePath(checked.logDir, 'options.logDir', FN);
  if (existsSync(logDir) && !statSync(logDir).isDirectory()) {
    throw new InvalidArgumentError({
      parameter: 'options.logDir',
      functionName: FN,
      value: logDir,
      expected: 'a folder (this path is a file)',
    });
  }
  const host = checked.hostname ?? osHostname();
  if (typeof host !== 'string' || !/^[A-Za-z0-9._-]+$/.test(host)) {
    throw new InvalidArgumentError({
      parameter: 'options.hostname',
      functionName: FN,
      value: host,
      expected: 'a host name of letters, digits, dots, dashes and underscores',
    });
  }
  return { logDir, host };
}

/**
 * A sink writing a TensorBoard event file, `<logDir>/events.out.tfevents.<unix-seconds>.<hostname>`
 * (a `.1`, `.2`, … suffix when that name is taken: an existing file is never touched), in
 * TensorFlow's TFRecord framing (uint64 length, masked CRC-32C of the length, the serialized
 * `Event`, masked CRC-32C of the data). The first record is `Event { file_version:
 * "brain.Event:2" }`; each {@link MetricRecord} becomes one `Event { wall_time, step, summary }`
 * with a `simple_value` per metric. Tags are `<phase>/<metric>` when the record has a phase
 * (`train/reward/mean`, as TRL's logs read in TensorBoard), else the metric name. Values are
 * stored as float32 (the proto's type); each record is written through at once, so a running
 * `tensorboard` sees it live.
 *
 * @example
 * ```ts
 * const sink = await createTensorBoardSink({ logDir: 'runs/a/tensorboard' });
 * await sink.write({ step: 1, phase: 'train', metrics: { 'reward/mean': 0.25 } });
 * await sink.close(); // then: tensorboard --logdir runs/a/tensorboard
 * ```
 * @throws {InvalidArgumentError} `UNKNOWN_OPTION` / `INVALID_ARGUMENT` for bad options.
 */
export async function createTensorBoardSink(options: TensorBoardSinkOptions): Promise<MetricsSink> {
  const { logDir, host } = parseOptions(options);
  const seconds = Math.floor(Date.now() / 1000);
  let file: OwnedFile | undefined;
  let closed = false;
  /** Creates the event file on the first write, under a name no file has (even a racing one). */
  const open = (header: Uint8Array): OwnedFile => {
    for (;;) {
      const candidate = new OwnedFile(freeName(logDir, seconds, host), 'refuse', {
        functionName: FN,
        parameter: 'options.logDir',
      });
      try {
        candidate.append(header);
        return candidate;
      } catch (error) {
        if (!OverwriteRefusedError.isInstance(error)) throw error;
      }
    }
  };
  return {
    name: `tensorboard:${logDir}`,
    async write(record: MetricRecord) {
      validateRecord(record, `${FN}().write`);
      const wallTime = Date.now() / 1000;
      const prefix = record.phase === undefined ? '' : `${record.phase}/`;
      const scalars = Object.entries(record.metrics).map(([name, value]) => ({
        tag: `${prefix}${name}`,
        value,
      }));
      const event = tfRecord(encodeScalarsEvent(wallTime, record.step, scalars));
      if (closed) {
        throw new RlvrError(ErrorCode.UNAVAILABLE, `${FN}: the sink for '${logDir}' is closed`);
      }
      file ??= open(tfRecord(encodeFileVersionEvent(wallTime)));
      file.append(event);
    },
    async flush() {
      file?.sync();
    },
    async close() {
      closed = true;
      file?.close();
    },
  };
}
