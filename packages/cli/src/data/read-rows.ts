import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parquetReadObjects } from 'hyparquet';
import { DatasetError } from '../errors/dataset-error.js';

/** File formats the CLI reads. */
export const DATASET_FORMATS = ['jsonl', 'json', 'csv', 'parquet'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

/** One row of a dataset file with its position (line for JSONL/CSV, 1-based row otherwise). */
export type RawRow = { line: number; data: Record<string, unknown> };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The format of a file from its extension (`.jsonl`/`.ndjson`, `.json`, `.csv`, `.parquet`). */
export function formatOf(file: string): DatasetFormat | undefined {
  const extension = extname(file).toLowerCase();
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  if (extension === '.json') return 'json';
  if (extension === '.csv') return 'csv';
  if (extension === '.parquet') return 'parquet';
  return undefined;
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function readJsonl(file: string, text: string): RawRow[] {
  const rows: RawRow[] = [];
  stripBom(text)
    .split(/\r?\n/)
    .forEach((line, index) => {
      if (line.trim().length === 0) return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new DatasetError({
          file,
          line: index + 1,
          message: `not valid JSON (${(error as Error).message})`,
          cause: error,
        });
      }
      if (!isPlainObject(value)) {
        throw new DatasetError({ file, line: index + 1, message: 'expected a JSON object' });
      }
      rows.push({ line: index + 1, data: value });
    });
  return rows;
}

function readJson(file: string, text: string): RawRow[] {
  let value: unknown;
  try {
    value = JSON.parse(stripBom(text));
  } catch (error) {
    throw new DatasetError({
      file,
      message: `not valid JSON (${(error as Error).message})`,
      cause: error,
    });
  }
  if (!Array.isArray(value)) {
    throw new DatasetError({ file, message: 'expected a JSON array of objects' });
  }
  return value.map((item: unknown, index) => {
    if (!isPlainObject(item)) {
      throw new DatasetError({ file, line: index + 1, message: 'expected a JSON object' });
    }
    return { line: index + 1, data: item };
  });
}

/**
 * The 1-based line where each CSV record starts. csv-parse reports the byte offset after each
 * record (`info.bytes`); its `info.lines` counts a quoted CRLF twice, so lines are counted here.
 */
function csvStartLines(text: string, ends: readonly number[]): number[] {
  const bytes = Buffer.from(text, 'utf8');
  const header = bytes.indexOf(0x0a);
  let position = header < 0 ? bytes.length : header + 1;
  let line = 2;
  return ends.map((end) => {
    while (position < end && (bytes[position] === 0x0d || bytes[position] === 0x0a)) {
      if (bytes[position] === 0x0a) line++;
      position++;
    }
    const start = line;
    for (; position < end; position++) if (bytes[position] === 0x0a) line++;
    return start;
  });
}

function readCsv(file: string, text: string): RawRow[] {
  let records: { record: Record<string, string>; info: { bytes: number } }[];
  try {
    records = parseCsv(text, {
      columns: true,
      bom: true,
      skip_empty_lines: true,
      info: true,
    }) as unknown as typeof records;
  } catch (error) {
    const line = (error as { lines?: number }).lines;
    throw new DatasetError({
      file,
      ...(typeof line === 'number' ? { line } : {}),
      message: `not valid CSV (${(error as Error).message})`,
      cause: error,
    });
  }
  const lines = csvStartLines(
    text,
    records.map(({ info }) => info.bytes),
  );
  return records.map(({ record }, index) => ({ line: lines[index]!, data: { ...record } }));
}

function plainValue(value: unknown): unknown {
  if (typeof value === 'bigint') {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  }
  if (Array.isArray(value)) return value.map(plainValue);
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainValue(v)]));
  }
  return value;
}

async function readParquet(file: string): Promise<RawRow[]> {
  const bytes = await readFile(file);
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  let rows: Record<string, unknown>[];
  try {
    rows = (await parquetReadObjects({ file: buffer as ArrayBuffer })) as Record<string, unknown>[];
  } catch (error) {
    throw new DatasetError({
      file,
      message: `not a readable Parquet file (${(error as Error).message})`,
      cause: error,
    });
  }
  return rows.map((row, index) => ({
    line: index + 1,
    data: plainValue(row) as Record<string, unknown>,
  }));
}

/**
 * Reads every row of a JSONL, JSON (an array of objects), CSV (header row) or Parquet file. A
 * UTF-8 BOM and CRLF line ends are accepted.
 * @throws {DatasetError} naming the file and line for a malformed row.
 */
export async function readRows(file: string, format?: DatasetFormat): Promise<RawRow[]> {
  const kind = format ?? formatOf(file);
  if (kind === undefined) {
    throw new DatasetError({
      file,
      message: `unknown dataset format: name the file .jsonl, .json, .csv or .parquet, or set dataset.format to one of ${DATASET_FORMATS.join(', ')}`,
    });
  }
  if (kind === 'parquet') return readParquet(file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DatasetError({ file, message: 'cannot read the file', cause: error });
  }
  if (kind === 'jsonl') return readJsonl(file, text);
  if (kind === 'json') return readJson(file, text);
  return readCsv(file, text);
}
