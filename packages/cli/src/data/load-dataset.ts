import { basename } from 'node:path';
import { ErrorCode } from '@rlvr/core';
import {
  defineOptions,
  expecting,
  integer,
  type OptionsInput,
  object,
  oneOf,
  optional,
  required,
  text,
  zod,
} from '@rlvr/options';
import { ConfigError } from '../errors/config-error.js';
import { DatasetError } from '../errors/dataset-error.js';
import { DATASET_FORMATS, type DatasetFormat, readRows } from './read-rows.js';

/** The fields a dataset row maps to (`columns: { prompt: question, answer: solution }`). */
export const DATASET_FIELDS = ['id', 'prompt', 'answer', 'completion'] as const;
export type DatasetField = (typeof DATASET_FIELDS)[number];

const columnOf = (field: DatasetField) =>
  optional(text('a column name'), {
    description: `The column that holds the ${field}.`,
    defaultText: `\`${field}\``,
  });

/**
 * The `dataset` config object, declared once: its keys ({@link DATASET_KEYS}), type, JSON Schema
 * and `--help` lines (the values are checked by `loadDataset`, with the CLI's messages).
 */
export const DATASET_OPTIONS = defineOptions(
  {
    path: required(text('a file path'), 'The dataset file (JSONL, JSON, CSV or Parquet).'),
    format: optional(oneOf(DATASET_FORMATS), {
      description: 'The file format.',
      defaultText: "the file's extension",
    }),
    columns: optional(
      expecting(
        object(
          Object.fromEntries(DATASET_FIELDS.map((field) => [field, columnOf(field)])) as {
            [Field in DatasetField]: ReturnType<typeof columnOf>;
          },
        ),
        `a mapping of ${DATASET_FIELDS.join(' / ')} to column names`,
      ),
      'Field → column of the file, e.g. `{ prompt: question, answer: solution }`.',
    ),
    limit: optional(integer({ min: 1 }), {
      description: 'Use only the first N rows.',
      defaultText: 'all rows',
    }),
  },
  { parameter: 'dataset' },
);

/** Keys of the `dataset` config object. */
export const DATASET_KEYS = DATASET_OPTIONS.keys;

/** What a `dataset` config value is: a path, or `{ path, format?, columns?, limit? }`. */
export const DATASET_SCHEMA = zod.union([text('a file path'), DATASET_OPTIONS.schema]);

/** A `dataset` config: a path, or `{ path, format?, columns?, limit? }`. */
export type DatasetConfig = OptionsInput<typeof DATASET_SCHEMA>;

/** A chat message of a prompt or completion. */
export type Message = { role: string; content: string };

/** One dataset row after column mapping. Other columns are kept (rewards get them as metadata). */
export type DatasetRecord = {
  id: string;
  prompt: string;
  answer?: unknown;
  completion?: string;
  /** 1-based line (JSONL, CSV) or row (JSON, Parquet) in the file. */
  line: number;
  /** The remaining columns. */
  extra: Record<string, unknown>;
};

/** How chat-message prompts become text: the model tokenizer's chat template. */
export type ChatRenderer = {
  applyChatTemplate?: (
    messages: readonly Message[],
    options?: { addGenerationPrompt?: boolean },
  ) => string;
  readonly chatTemplate?: string | undefined;
};

function normalizeConfig(config: unknown, key: string, source: string | undefined) {
  const bad = (message: string) =>
    new ConfigError({ key, source, message, code: ErrorCode.INVALID_ARGUMENT });
  if (typeof config === 'string' && config.length > 0) {
    return {
      path: config,
      columns: {} as Partial<Record<DatasetField, string>>,
      format: undefined,
      limit: undefined,
    };
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw bad('expected a file path or { path, format?, columns?, limit? }');
  }
  const value = config as Record<string, unknown>;
  if (typeof value.path !== 'string' || value.path.length === 0)
    throw bad('dataset.path: expected a file path');
  if (value.format !== undefined && !DATASET_FORMATS.includes(value.format as DatasetFormat)) {
    throw bad(
      `dataset.format: expected one of ${DATASET_FORMATS.join(', ')}, got ${String(value.format)}`,
    );
  }
  const columns = (value.columns ?? {}) as Record<string, unknown>;
  if (columns === null || typeof columns !== 'object' || Array.isArray(columns)) {
    throw bad('dataset.columns: expected a mapping like { prompt: question, answer: solution }');
  }
  for (const [field, column] of Object.entries(columns)) {
    if (!DATASET_FIELDS.includes(field as DatasetField)) {
      throw new ConfigError({
        key: `${key}.columns.${field}`,
        source,
        message: `unknown field (fields: ${DATASET_FIELDS.join(', ')})`,
        code: ErrorCode.UNKNOWN_OPTION,
      });
    }
    if (typeof column !== 'string' || column.length === 0)
      throw bad(`dataset.columns.${field}: expected a column name`);
  }
  if (
    value.limit !== undefined &&
    (!Number.isInteger(value.limit) || (value.limit as number) < 1)
  ) {
    throw bad(`dataset.limit: expected an integer >= 1, got ${String(value.limit)}`);
  }
  return {
    path: value.path,
    format: value.format as DatasetFormat | undefined,
    columns: columns as Partial<Record<DatasetField, string>>,
    limit: value.limit as number | undefined,
  };
}

function isMessages(value: unknown): value is Message[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (item) =>
        item !== null &&
        typeof item === 'object' &&
        typeof (item as Message).role === 'string' &&
        typeof (item as Message).content === 'string',
    )
  );
}

function promptText(
  value: unknown,
  at: { file: string; line: number; column: string },
  chat: ChatRenderer | undefined,
): string {
  if (typeof value === 'string' && value.length > 0) return value;
  if (isMessages(value)) {
    if (!chat?.applyChatTemplate || chat.chatTemplate === undefined) {
      throw new DatasetError({
        file: at.file,
        line: at.line,
        message: `column '${at.column}' holds chat messages but the model's tokenizer has no chat template (add chat_template to tokenizer_config.json, or use text prompts)`,
      });
    }
    return chat.applyChatTemplate(value, { addGenerationPrompt: true });
  }
  throw new DatasetError({
    file: at.file,
    line: at.line,
    message: `column '${at.column}': expected a non-empty string or a list of {role, content} messages, got ${JSON.stringify(value)?.slice(0, 60)}`,
  });
}

function completionText(
  value: unknown,
  at: { file: string; line: number; column: string },
): string {
  if (typeof value === 'string' && value.length > 0) return value;
  if (isMessages(value)) {
    const assistant = value.filter((message) => message.role === 'assistant');
    if (assistant.length > 0) return assistant.map((message) => message.content).join('');
  }
  throw new DatasetError({
    file: at.file,
    line: at.line,
    message: `column '${at.column}': expected a non-empty string (or assistant messages), got ${JSON.stringify(value)?.slice(0, 60)}`,
  });
}

/**
 * Loads a dataset file into records: column mapping, ids (the `id` column, else `<line>`), chat
 * prompts rendered with the tokenizer's chat template, and the fields `need` says must be there.
 * @throws {DatasetError} naming the file and line of a bad row; {@link ConfigError} for a bad
 * `dataset` config.
 */
export async function loadDataset(
  config: unknown,
  options: {
    need: readonly DatasetField[];
    chat?: ChatRenderer;
    /** Config key (default `dataset`) and its source, for errors. */
    key?: string;
    source?: string | undefined;
  },
): Promise<DatasetRecord[]> {
  const spec = normalizeConfig(config, options.key ?? 'dataset', options.source);
  const file = spec.path;
  const column = (field: DatasetField) => spec.columns[field] ?? field;
  let rows = await readRows(file, spec.format);
  if (spec.limit !== undefined) rows = rows.slice(0, spec.limit);
  if (rows.length === 0) throw new DatasetError({ file, message: 'the dataset has no rows' });
  const mapped = new Set(DATASET_FIELDS.map(column));
  const seen = new Map<string, number>();
  return rows.map(({ line, data }) => {
    for (const field of options.need) {
      if (!(column(field) in data)) {
        throw new DatasetError({
          file,
          line,
          message: `no column '${column(field)}' for the ${field} (columns: ${Object.keys(data).join(', ')}; map one with dataset.columns.${field})`,
        });
      }
    }
    const rawId = data[column('id')];
    let id: string;
    if (rawId === undefined || rawId === null || rawId === '') id = `${basename(file)}:${line}`;
    else if (typeof rawId === 'string' || typeof rawId === 'number') id = String(rawId);
    else
      throw new DatasetError({
        file,
        line,
        message: `column '${column('id')}': expected a string or number id`,
      });
    const previous = seen.get(id);
    if (previous !== undefined) {
      throw new DatasetError({
        file,
        line,
        message: `duplicate id '${id}' (first at ${previous})`,
      });
    }
    seen.set(id, line);
    const at = (field: DatasetField) => ({ file, line, column: column(field) });
    const record: DatasetRecord = {
      id,
      prompt: promptText(data[column('prompt')], at('prompt'), options.chat),
      line,
      extra: Object.fromEntries(Object.entries(data).filter(([key]) => !mapped.has(key))),
    };
    if (data[column('answer')] !== undefined) record.answer = data[column('answer')];
    if (options.need.includes('completion') || data[column('completion')] !== undefined) {
      record.completion = completionText(data[column('completion')], at('completion'));
    }
    return record;
  });
}

/** Records as GrpoTrainer / distill prompt records (`{ id, prompt, answer?, ...extra }`). */
export function toPromptRecords(
  records: readonly DatasetRecord[],
): { id: string; prompt: string; answer?: unknown; [field: string]: unknown }[] {
  return records.map((record) => ({
    ...record.extra,
    id: record.id,
    prompt: record.prompt,
    ...(record.answer === undefined ? {} : { answer: record.answer }),
  }));
}
