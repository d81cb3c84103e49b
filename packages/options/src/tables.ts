import { defaultText, descriptions, expectedText, type Schema } from './fields.js';
import { defaultOf, layers, shapeOf, unwrap } from './introspect.js';

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function firstOf<T>(schema: Schema, read: (layer: Schema) => T | undefined): T | undefined {
  for (const layer of layers(schema)) {
    const value = read(layer);
    if (value !== undefined) return value;
  }
  return undefined;
}

function isOptional(schema: Schema): boolean {
  return layers(schema).some(
    (layer) => (layer as unknown as { _zod: { optin?: string } })._zod.optin === 'optional',
  );
}

/** What a README row and a `--help` line say about one field. */
export type FieldSummary = {
  /** What it takes: the text its errors use (`an integer >= 1`). */
  takes: string;
  /** Its default: the value in backticks, its `defaultText`, `required` or `—` (not set). */
  shownDefault: string;
  description: string;
};

/** The {@link FieldSummary} of one field of an options schema. */
export function fieldSummary(field: Schema): FieldSummary {
  const own = defaultOf(field);
  return {
    takes: firstOf(field, expectedText) ?? '',
    shownDefault:
      firstOf(field, defaultText) ??
      (own !== undefined
        ? `\`${JSON.stringify(own.value)}\``
        : isOptional(field)
          ? '—'
          : 'required'),
    description: firstOf(field, (layer) => descriptions.get(layer)?.description) ?? '',
  };
}

type UnionDef = {
  type: string;
  options?: Schema[];
  discriminator?: string;
};

const defOf = (schema: Schema) => (schema as unknown as { _zod: { def: UnionDef } })._zod.def;
const tagsOf = (branch: Schema, key: string): unknown[] => [
  ...((branch as unknown as { _zod: { propValues?: Record<string, Set<unknown>> } })._zod
    .propValues?.[key] ?? []),
];

function row(name: string, summary: FieldSummary): string {
  const { takes, shownDefault, description } = summary;
  return `| \`${name}\` | ${cell(takes)} | ${cell(shownDefault)} | ${cell(description)} |`;
}

function rows(shape: Record<string, Schema>, prefix: string, when = ''): string[] {
  const out: string[] = [];
  for (const [key, field] of Object.entries(shape)) {
    const name = `${prefix}${key}`;
    const summary = fieldSummary(field);
    out.push(row(name, { ...summary, description: `${when}${summary.description}` }));
    const def = defOf(unwrap(field));
    if (def.type === 'union' && def.discriminator !== undefined) {
      out.push(...unionRows(def, `${name}.`));
    } else if (shapeOf(field) !== undefined) {
      out.push(...rows(shapeOf(field)!, `${name}.`));
    }
  }
  return out;
}

/** A discriminated union: its tag, then each branch's other fields, marked with their tag. */
function unionRows(def: UnionDef, prefix: string): string[] {
  const tag = def.discriminator!;
  const branches = def.options ?? [];
  const tags = branches.flatMap((branch) => tagsOf(branch, tag));
  const out = [
    row(`${prefix}${tag}`, {
      takes: `one of ${tags.map((value) => `'${String(value)}'`).join(', ')}`,
      shownDefault: 'required',
      description: 'Which kind; the fields below depend on it.',
    }),
  ];
  for (const branch of branches) {
    const { [tag]: _tag, ...fields } = shapeOf(branch) ?? {};
    const when = `With \`${tag}: '${tagsOf(branch, tag).map(String).join("' | '")}'\`: `;
    out.push(...rows(fields, prefix, when));
  }
  return out;
}

/**
 * The options of `schema` as a Markdown table: option (nested options dotted), what it takes (the
 * text its errors use), its default (`required`, `—` for "not set") and its description.
 */
export function optionsTable(schema: Schema): string {
  return [
    '| option | takes | default | description |',
    '| --- | --- | --- | --- |',
    ...rows(shapeOf(schema) ?? {}, ''),
  ].join('\n');
}

const start = (name: string) => `<!-- options-table:${name} -->`;
const end = (name: string) => `<!-- /options-table:${name} -->`;

/**
 * `markdown` with the block between `<!-- options-table:NAME -->` and `<!-- /options-table:NAME
 * -->` replaced by `tables[NAME]`, for each name (a missing marker pair is an error: the README
 * must say where the table goes).
 */
export function fillOptionsTables(markdown: string, tables: Readonly<Record<string, string>>) {
  let out = markdown;
  for (const [name, table] of Object.entries(tables)) {
    const from = out.indexOf(start(name));
    const to = out.indexOf(end(name));
    if (from < 0 || to < from) {
      throw new Error(`no '${start(name)}' … '${end(name)}' block in the README`);
    }
    out = `${out.slice(0, from + start(name).length)}\n${table}\n${out.slice(to)}`;
  }
  return out;
}

/**
 * The README `markdown` with every generated options table brought up to date, and the names of
 * the tables that were not (none: the README is current). A package's test compares; the same call
 * writes the file when asked to (`UPDATE_OPTIONS_TABLES=1`).
 */
export function syncOptionsTables(
  markdown: string,
  schemas: Readonly<Record<string, Schema>>,
): { stale: string[]; markdown: string } {
  const stale: string[] = [];
  let updated = markdown;
  for (const [name, schema] of Object.entries(schemas)) {
    const next = fillOptionsTables(updated, { [name]: optionsTable(schema) });
    if (next !== updated) stale.push(name);
    updated = next;
  }
  return { stale, markdown: updated };
}
