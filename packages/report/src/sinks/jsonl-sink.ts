import type { MetricRecord } from '@rlvr/core';
import { parseFileOptions } from './file-options.js';
import type { IfExists, MetricsSink } from './metrics-sink.js';
import { OwnedFile } from './owned-file.js';
import { validateRecord } from './validate-record.js';

/** Options of {@link createJsonlSink}. */
export type JsonlSinkOptions = {
  /** The `.jsonl` file to write (its folder is created on the first write). */
  path: string;
  /** When the file exists already. Default `'refuse'` (see {@link IfExists}). */
  ifExists?: IfExists;
};

const FN = 'createJsonlSink';
const KNOWN = ['path', 'ifExists'] as const;

/**
 * A sink writing one JSON object per line, exactly the line format of GrpoTrainer's
 * `metrics.jsonl`: `{"step":3,"elapsedMs":812.5,"phase":"train","metrics":{"loss":0.1}}` (keys in
 * the record's own order; NaN and ±Infinity become `null`, as `JSON.stringify` writes them).
 * Appending to a file whose last line is torn starts a new line first.
 *
 * @example
 * ```ts
 * const sink = await createJsonlSink({ path: 'runs/a/sft-metrics.jsonl' });
 * await sink.write({ step: 1, elapsedMs: 120, phase: 'sft', metrics: { loss: 2.3 } });
 * await sink.close();
 * ```
 * @throws {InvalidArgumentError} `UNKNOWN_OPTION` / `INVALID_ARGUMENT` for bad options.
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` when `path` exists and `ifExists` is `'refuse'`.
 */
export async function createJsonlSink(options: JsonlSinkOptions): Promise<MetricsSink> {
  const { path, ifExists } = parseFileOptions(options, FN, KNOWN);
  const file = new OwnedFile(path, ifExists, { functionName: FN, parameter: 'options.path' });
  let separator = file.endsMidLine ? '\n' : '';
  return {
    name: `jsonl:${path}`,
    async write(record: MetricRecord) {
      validateRecord(record, `${FN}().write`);
      file.append(`${separator}${JSON.stringify(record)}\n`);
      separator = '';
    },
    async flush() {
      file.sync();
    },
    async close() {
      file.close();
    },
  };
}
