import { fieldSummary, type Schema, shapeOf, toJsonSchema, zod } from '@rlvr/options';
import type { ConfigSpec } from './load-config.js';

/**
 * A config's zod schema: every key of `spec.known`, each one the package schema the spec names
 * for it (`spec.schemas`), else an object of its `spec.nested` keys, else any value; nothing else.
 */
export function configSchema(spec: ConfigSpec): Schema {
  const shape: Record<string, Schema> = {};
  for (const key of spec.known) {
    const own = spec.schemas?.[key];
    const nested = spec.nested?.[key];
    shape[key] = zod.optional(
      own ??
        (nested
          ? // a path or a name (dataset: data/train.jsonl, a served model's name) or the object
            zod.union([
              zod.string(),
              zod.strictObject(
                Object.fromEntries(nested.map((inner) => [inner, zod.optional(zod.unknown())])),
              ),
            ])
          : zod.unknown()),
    );
  }
  return zod.strictObject(shape);
}

/**
 * The JSON Schema of a subcommand's config file (what `rlvr init` writes to
 * `schemas/<command>.schema.json` and the configs name in `# yaml-language-server: $schema=…`):
 * the keys, types, ranges, defaults and descriptions of the packages' options, unknown keys refused.
 * Keys required by the run are not required here (`--set` may give them).
 */
export function configJsonSchema(command: string, spec: ConfigSpec): Record<string, unknown> {
  return toJsonSchema(configSchema(spec), { title: `rlvr ${command} config` });
}

/**
 * One `--help` line per key a config takes from a package's options (`prefix.key  takes; default
 * …`), read from the schema: the same words as the packages' README tables. `defaults` gives the
 * CLI's own default of a key the package requires.
 */
export function keysHelp(
  prefix: string,
  schema: Schema,
  options: { keys?: readonly string[]; defaults?: Readonly<Record<string, unknown>> } = {},
): string[] {
  const shape = shapeOf(schema) ?? {};
  return (options.keys ?? Object.keys(shape)).flatMap((key) => {
    const field = shape[key];
    if (field === undefined) return [];
    const { takes, shownDefault } = fieldSummary(field);
    const cli = options.defaults?.[key];
    const shown =
      cli !== undefined
        ? `; default ${JSON.stringify(cli)} (the CLI's)`
        : shownDefault === '—'
          ? ''
          : shownDefault === 'required'
            ? '; required'
            : `; default ${shownDefault.replace(/`/g, '')}`;
    return [`  ${`${prefix}${key}`.padEnd(30)} ${takes}${shown}`.trimEnd()];
  });
}
