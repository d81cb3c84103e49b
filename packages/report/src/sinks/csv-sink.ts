import type { MetricRecord } from '@rlvr/core';
import { parseFileOptions } from './file-options.js';
import type { MetricsSink } from './metrics-sink.js';
import { OwnedFile } from './owned-file.js';
import { validateRecord } from './validate-record.js';

/** Options of {@link createCsvSink}. */
export type CsvSinkOptions = {
  /** The `.csv` file to write (its folder is created on the first write). */
  path: string;
  /**
   * When the file exists already: `'refuse'` (default) or `'overwrite'`. `'append'` is not
   * offered: a later metric would need a wider header, and a file this run did not create is
   * never rewritten. Write a resumed run's metrics to a new CSV file instead.
   */
  ifExists?: 'refuse' | 'overwrite';
};

const FN = 'createCsvSink';
const KNOWN = ['path', 'ifExists'] as const;
const FIXED = ['step', 'elapsedMs', 'phase'] as const;

/** RFC 4180 quoting: fields with a comma, quote, CR or LF are quoted, quotes doubled. */
function field(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Numbers as JavaScript's shortest round-trip form; non-finite as pandas reads them. */
function number(value: number | undefined): string {
  if (value === undefined) return '';
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  return String(value);
}

function row(record: MetricRecord, columns: readonly string[]): string {
  const cells = [
    String(record.step),
    number(record.elapsedMs),
    field(record.phase ?? ''),
    ...columns.map((name) => number(record.metrics[name])),
  ];
  return `${cells.join(',')}\n`;
}

function header(columns: readonly string[]): string {
  return `${[...FIXED, ...columns].map(field).join(',')}\n`;
}

/**
 * A sink writing a CSV table: `step,elapsedMs,phase` and then one column per metric name, in the
 * order names first appear (a metric absent from a record is an empty cell; NaN is `NaN`,
 * ±Infinity `inf`/`-inf`, as pandas reads them).
 *
 * New columns: the header is the union of the metric names seen so far. A record is appended as
 * one line while it brings no new name; when one brings a new name, the sink rewrites the whole
 * file (atomically: temporary sibling, fsync, rename) with the wider header and every row so
 * far. It only ever rewrites the file it created in this run (or one the caller allowed with
 * `ifExists: 'overwrite'`), which is why appending to an existing CSV is not offered. The rows are
 * kept in memory for that (a few bytes per metric per step).
 *
 * @example
 * ```ts
 * const sink = await createCsvSink({ path: 'runs/a/metrics.csv' });
 * await sink.write({ step: 1, phase: 'train', metrics: { loss: 0.9 } });
 * await sink.write({ step: 2, phase: 'train', metrics: { loss: 0.7, kl: 0.01 } }); // header grows
 * await sink.close();
 * ```
 * @throws {InvalidArgumentError} `UNKNOWN_OPTION` / `INVALID_ARGUMENT` for bad options.
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` when `path` exists and `ifExists` is `'refuse'`.
 */
export async function createCsvSink(options: CsvSinkOptions): Promise<MetricsSink> {
  const { path, ifExists } = parseFileOptions(options, FN, KNOWN, ['refuse', 'overwrite']);
  const file = new OwnedFile(path, ifExists, { functionName: FN, parameter: 'options.path' });
  const columns: string[] = [];
  const known = new Set<string>();
  const records: MetricRecord[] = [];
  return {
    name: `csv:${path}`,
    async write(record: MetricRecord) {
      validateRecord(record, `${FN}().write`);
      const copy: MetricRecord = { ...record, metrics: { ...record.metrics } };
      const added = Object.keys(copy.metrics).filter((name) => !known.has(name));
      for (const name of added) {
        known.add(name);
        columns.push(name);
      }
      records.push(copy);
      if (!file.opened) {
        file.append(header(columns) + row(copy, columns));
      } else if (added.length > 0) {
        file.replace(header(columns) + records.map((entry) => row(entry, columns)).join(''));
      } else {
        file.append(row(copy, columns));
      }
    },
    async flush() {
      file.sync();
    },
    async close() {
      file.close();
    },
  };
}
