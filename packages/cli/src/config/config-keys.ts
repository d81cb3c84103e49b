import {
  custom,
  documented,
  expecting,
  type FieldDoc,
  fieldSummary,
  type Schema,
  zod,
} from '@rlvr/options';
import type { ConfigSpec } from './load-config.js';

/**
 * One top-level config key, declared once: what it takes (the JSON Schema's `schema`, or any
 * value when the run checks it itself) and its description, both shown by `--help`.
 */
export function configKey(takes: string, doc: string | FieldDoc, schema?: Schema): Schema {
  const field = zod.optional(schema ?? custom(() => true, takes));
  return documented(expecting(field, takes), doc);
}

/** What {@link configSpec} builds a {@link ConfigSpec} from: `keys` in place of `known`. */
export type ConfigDeclaration = Omit<ConfigSpec, 'known' | 'schemas'> & {
  /**
   * Every top-level key the config may have, in the order of its key list (the order of the
   * "valid keys" hint), each with its declaration: the CLI's own keys by {@link configKey}, the
   * packages' keys by their option schemas.
   */
  keys: Readonly<Record<string, Schema>>;
};

/** A {@link ConfigSpec} whose key list and schemas are the declared `keys`. */
export function configSpec(declaration: ConfigDeclaration): ConfigSpec {
  const { keys, ...rest } = declaration;
  return { ...rest, known: Object.keys(keys), schemas: keys };
}

const shortValue = (value: unknown): string | undefined => {
  if (value === undefined || (typeof value === 'object' && !Array.isArray(value))) return undefined;
  return JSON.stringify(value);
};

/**
 * The `--help` lines of a config's own keys: `key  takes; required | default …`, then the key's
 * description, all read from the declarations in `spec.schemas` (`keys`: which ones, in order).
 * A default from `spec.defaults` (not the schema's) says it is the CLI's unless `cliDefaults` is false.
 */
export function configKeysHelp(
  spec: ConfigSpec,
  keys: readonly string[],
  options: { describe?: boolean; cliDefaults?: boolean } = {},
): string[] {
  return keys.flatMap((key) => {
    const field = spec.schemas?.[key];
    if (field === undefined) return [];
    const { takes, shownDefault, description } = fieldSummary(field);
    const cli = shortValue(spec.defaults[key]);
    const shown = spec.required.includes(key)
      ? '; required'
      : shownDefault !== '—' && shownDefault !== 'required'
        ? `; default ${shownDefault.replace(/`/g, '')}`
        : cli !== undefined
          ? `; default ${cli}${options.cliDefaults === false ? '' : " (the CLI's)"}`
          : '';
    const line = `  ${key.padEnd(30)} ${takes}${shown}`.trimEnd();
    return options.describe === false ? [line] : [line, `      ${description}`];
  });
}

/** A `--help` section of config keys: a heading, then {@link configKeysHelp}'s lines. */
export type KeysSection = {
  title: string;
  keys: readonly string[];
  /** Each key's description on the line below it (default true). */
  describe?: boolean;
  /** Whether `spec.defaults` of these keys are the CLI's (default true; else a note says whose). */
  cliDefaults?: boolean;
};

/** The `--help` text of a config's keys, section by section (see {@link configKeysHelp}). */
export function configHelp(spec: ConfigSpec, sections: readonly KeysSection[]): string {
  return sections
    .map(({ title, keys, describe = true, cliDefaults = true }) =>
      [`${title}:`, ...configKeysHelp(spec, keys, { describe, cliDefaults })].join('\n'),
    )
    .join('\n');
}

/** The heading of a config's own keys in `--help`. */
export const CONFIG_KEYS_TITLE = 'Config keys (--print-config shows the values a run uses)';
