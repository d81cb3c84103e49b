import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import {
  diffSettings,
  fingerprint,
  hashFloat32,
  type NamedTensor,
  ResumeMismatchError,
} from '@rlvr/core';
import { custom, defineOptions, type OptionsInput, optional } from '@rlvr/options';
import type { TraceRecord } from './trace-record.js';

/** Format tag of the header line of a traces file. */
export const TRACES_FORMAT = 'rlvr-traces-v1';

/**
 * Everything that decides which traces a teacher writes, so that a traces file is never resumed
 * (or read for distillation) with a different teacher or different sampling settings.
 */
export type TraceSettings = {
  /** Traces per prompt. */
  k: number;
  /** The sampling settings, `maxNewTokens` and the base `seed` included. */
  sampling: Record<string, unknown>;
  /** Hash of the teacher's weights and tokenizer (`null` when the caller gave none). */
  teacher: { weightsHash: string | null; promptTemplate: string | null };
  acceptThreshold: number;
  keepLogprobs: boolean;
};

/**
 * The first line of a traces file written by this version: `{"type":"header","format":
 * "rlvr-traces-v1","fingerprint":"…","settings":{…}}`. Readers of older versions skip it (it has no
 * `promptId`), so the file stays readable everywhere.
 */
export type TracesHeader = {
  type: 'header';
  format: typeof TRACES_FORMAT;
  /** `fingerprint(settings)` from @rlvr/core. */
  fingerprint: string;
  settings: TraceSettings;
};

/**
 * Hash of a teacher's weights: tensor names and shapes, the exact float32 values (core's
 * `hashFloat32`, tensors in name order), and the tokenizer files when the checkpoint has them.
 * @internal
 */
export function teacherWeightsHash(weights: {
  tensors: readonly NamedTensor[];
  tokenizer?: unknown;
}): string {
  const tensors = [...weights.tensors].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  return fingerprint({
    layout: tensors.map((tensor) => [tensor.name, tensor.shape]),
    data: hashFloat32(tensors.map((tensor) => tensor.data)),
    tokenizer: weights.tokenizer === undefined ? null : fingerprint(weights.tokenizer),
  });
}

/** Builds the header line for `settings`. @internal */
export function makeHeader(settings: TraceSettings): TracesHeader {
  return { type: 'header', format: TRACES_FORMAT, fingerprint: fingerprint(settings), settings };
}

function isHeader(value: unknown): value is TracesHeader {
  const header = value as Partial<TracesHeader> | null;
  return (
    header !== null &&
    typeof header === 'object' &&
    header.type === 'header' &&
    typeof header.fingerprint === 'string'
  );
}

/** The parsed content of a traces file. @internal */
export type ParsedTraces = {
  header: TracesHeader | undefined;
  /** Every parseable record, in file order (duplicates included). */
  records: TraceRecord[];
  /** The file's bytes end with a newline (or the file is empty). */
  endsWithNewline: boolean;
  /** Non-blank lines in the file. */
  lines: number;
};

/** Reads and parses a traces file; a torn line (an interrupted write) is skipped. @internal */
export async function parseTracesFile(path: string): Promise<ParsedTraces> {
  const text = await readFile(path, 'utf8');
  let header: TracesHeader | undefined;
  const records: TraceRecord[] = [];
  let lines = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    lines++;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // a torn line from an interrupted write
    }
    if (isHeader(value)) {
      header ??= value;
      continue;
    }
    const record = value as TraceRecord;
    if (record && typeof record.promptId === 'string' && typeof record.completion === 'string')
      records.push(record);
  }
  return { header, records, endsWithNewline: text === '' || text.endsWith('\n'), lines };
}

/**
 * The usable traces of a file: for each prompt, the sample indices keep their last occurrence
 * (a group regenerated after a crash supersedes the partial one), and with a header only complete
 * groups (all `k` sample indices) are kept. @internal
 */
export function completeGroups(
  records: readonly TraceRecord[],
  k: number | undefined,
): Map<string, TraceRecord[]> {
  const byPrompt = new Map<string, Map<number, TraceRecord>>();
  for (const record of records) {
    let group = byPrompt.get(record.promptId);
    if (!group) {
      group = new Map();
      byPrompt.set(record.promptId, group);
    }
    group.set(record.sampleIndex, record);
  }
  const result = new Map<string, TraceRecord[]>();
  for (const [promptId, group] of byPrompt) {
    if (k !== undefined && group.size !== k) continue;
    result.set(
      promptId,
      [...group.values()].sort((a, b) => a.sampleIndex - b.sampleIndex),
    );
  }
  return result;
}

/** The options of {@link readTraces}, declared once (type, key list, README table). */
export const READ_TRACES_OPTIONS = defineOptions(
  {
    promptIds: optional(
      custom<Iterable<string>>(() => true, 'an iterable of prompt ids'),
      {
        description: 'Keep only the traces of these prompt ids (e.g. the dataset you distil on).',
        defaultText: 'all',
      },
    ),
    fingerprint: optional(
      custom<string>(() => true, 'a fingerprint'),
      {
        description:
          'The fingerprint the file must carry (`GenerateTracesResult.fingerprint`): a file written with another teacher or other sampling settings, or without a header, is refused (`RESUME_MISMATCH`).',
        defaultText: 'not checked',
      },
    ),
  },
  { parameter: 'options', functionName: 'readTraces' },
);

/** Options of {@link readTraces} (see {@link READ_TRACES_OPTIONS}). */
export type ReadTracesOptions = OptionsInput<typeof READ_TRACES_OPTIONS.schema>;

/**
 * Reads a traces file. Lines that do not parse (a torn write) are skipped; a group regenerated
 * after a crash replaces its partial first attempt, and in files with a header (written by this
 * version) prompts with fewer than `k` traces are left out.
 *
 * @example
 * ```ts
 * const { fingerprint } = await generateTraces({ ...options, outPath: 'traces.jsonl' });
 * const traces = await readTraces('traces.jsonl', { fingerprint, promptIds: prompts.map((p) => p.id) });
 * ```
 * @throws {ResumeMismatchError} `RESUME_MISMATCH` when `options.fingerprint` differs from the file's.
 * @throws {InvalidArgumentError} `UNKNOWN_OPTION` for an unknown option.
 */
export async function readTraces(
  path: string,
  options?: ReadTracesOptions,
): Promise<TraceRecord[]> {
  const FN = 'readTraces';
  const raw = READ_TRACES_OPTIONS.parse(options);
  const parsed = await parseTracesFile(path);
  if (raw.fingerprint !== undefined && parsed.header?.fingerprint !== raw.fingerprint) {
    throw new ResumeMismatchError({
      what: `The traces file ${path}`,
      differences: [
        {
          field: 'fingerprint',
          saved: parsed.header?.fingerprint ?? '(none: no header line)',
          current: raw.fingerprint,
        },
      ],
      functionName: FN,
    });
  }
  const groups = completeGroups(parsed.records, parsed.header?.settings.k);
  const wanted = raw.promptIds === undefined ? undefined : new Set(raw.promptIds);
  const records: TraceRecord[] = [];
  for (const [promptId, group] of groups) {
    if (wanted && !wanted.has(promptId)) continue;
    records.push(...group);
  }
  return records;
}

/**
 * The header of a traces file (`undefined` for a file without one, i.e. written by an older
 * version, or a missing file).
 */
export async function readTracesHeader(path: string): Promise<TracesHeader | undefined> {
  if (!existsSync(path)) return undefined;
  return (await parseTracesFile(path)).header;
}

/** The differences between a file's saved settings and the current ones, for the error. @internal */
export function settingsDifferences(saved: TraceSettings | undefined, current: TraceSettings) {
  if (saved === undefined) {
    return [{ field: 'header', saved: '(none: written by an older version)', current: 'present' }];
  }
  const differences = diffSettings(saved, current);
  return differences.length > 0
    ? differences
    : [{ field: 'fingerprint', saved: 'different', current: fingerprint(current) }];
}
