import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import {
  closestOption,
  ErrorCode,
  InvalidArgumentError,
  RlvrError,
  stableStringify,
} from '@rlvr/core';
import type { Schema } from '@rlvr/options';
import YAML from 'yaml';
import { ConfigError } from '../errors/config-error.js';

/** What one subcommand's config may hold. */
export type ConfigSpec = {
  /**
   * Every top-level key the config may have (anything else is an error naming the closest); the
   * commands' specs derive it from their declared keys (`configSpec`).
   */
  known: readonly string[];
  /** Nested objects whose keys the CLI checks itself (the packages check the others). */
  nested?: Readonly<Record<string, readonly string[]>>;
  /** Values used where neither the file nor `--set` gives one (shown by `--print-config`). */
  defaults: Readonly<Record<string, unknown>>;
  /** Keys that must have a value after merging. */
  required: readonly string[];
  /** Wrong names mapped to the right one, for the "did you mean" hint only. */
  aliases?: Readonly<Record<string, string>>;
  /**
   * The declaration of each key: the packages' option schemas of the keys that are passed to them
   * (`traces`: generateTraces' options less the keys the CLI sets), the CLI's own declarations of
   * the others, for the config's JSON Schema and `--help`.
   */
  schemas?: Readonly<Record<string, Schema>>;
};

/** A config after defaults, file and `--set` overrides, with where each top-level key came from. */
export type ResolvedConfig = {
  values: Record<string, unknown>;
  /** The config file, when one was given. */
  file: string | undefined;
  /** Top-level key → its source (the file path or `--set`); keys from defaults are absent. */
  origins: Map<string, string>;
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Parses a YAML or JSON config file (UTF-8, BOM accepted) into a plain object. */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError({
      key: '--config',
      message: `cannot read the config file '${path}'`,
      code: ErrorCode.INVALID_ARGUMENT,
      cause: error,
    });
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const extension = extname(path).toLowerCase();
  let value: unknown;
  try {
    value = extension === '.json' ? JSON.parse(text) : YAML.parse(text);
  } catch (error) {
    throw new ConfigError({
      key: '--config',
      source: path,
      message: `not valid ${extension === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message.split('\n')[0]}`,
      code: ErrorCode.INVALID_ARGUMENT,
      cause: error,
    });
  }
  if (value === null || value === undefined) return {};
  if (!isPlainObject(value)) {
    throw new ConfigError({
      key: '--config',
      source: path,
      message: 'expected a mapping of keys to values at the top level',
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  return value;
}

/**
 * Parses one `--set key=value`: the key is a dotted path (`schedule.learningRate`), the value is
 * read as a YAML scalar or flow collection (`0.1` → number, `true` → boolean, `[a, b]` → array,
 * `{a: 1}` → object, `null`), anything else stays a string.
 */
export function parseSet(text: string): { path: string[]; value: unknown } {
  const eq = text.indexOf('=');
  if (eq <= 0) {
    throw new ConfigError({
      key: text,
      source: '--set',
      message: `expected key=value (e.g. --set beta=0.04), got '${text}'`,
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  const key = text.slice(0, eq).trim();
  const raw = text.slice(eq + 1);
  const path = key.split('.');
  if (path.some((part) => part.length === 0)) {
    throw new ConfigError({
      key,
      source: '--set',
      message: 'a dotted path with no empty parts',
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  let value: unknown = raw;
  try {
    value = raw.trim() === '' ? '' : YAML.parse(raw);
  } catch {
    value = raw;
  }
  return { path, value };
}

function unknownKey(
  key: string,
  known: readonly string[],
  source: string | undefined,
  aliases: Readonly<Record<string, string>> | undefined,
): ConfigError {
  const suggestion = closestOption(key.split('.').at(-1)!, known, aliases);
  const hint =
    suggestion === undefined
      ? `valid keys: ${known.join(', ')}`
      : `did you mean '${key.includes('.') ? `${key.slice(0, key.lastIndexOf('.'))}.` : ''}${suggestion}'?`;
  return new ConfigError({
    key,
    source,
    message: `unknown key (${hint})`,
    code: ErrorCode.UNKNOWN_OPTION,
  });
}

function checkKeys(
  values: Record<string, unknown>,
  spec: ConfigSpec,
  source: string | undefined,
  prefix = '',
): void {
  for (const key of Object.keys(values)) {
    if (!spec.known.includes(key)) throw unknownKey(prefix + key, spec.known, source, spec.aliases);
    const nested = spec.nested?.[key];
    const value = values[key];
    if (nested && isPlainObject(value)) {
      for (const inner of Object.keys(value)) {
        if (!nested.includes(inner)) throw unknownKey(`${key}.${inner}`, nested, source, undefined);
      }
    }
  }
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = deepMerge(base[key], value);
  return out;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

/**
 * Resolves a subcommand's config: defaults, then the file (YAML or JSON), then each `--set` in
 * order. Unknown keys (in the file or in `--set`) and missing required keys are
 * {@link ConfigError}s naming the key, the closest valid one and the source.
 */
export async function resolveConfig(
  spec: ConfigSpec,
  options: { file?: string | undefined; sets?: readonly string[] },
): Promise<ResolvedConfig> {
  const origins = new Map<string, string>();
  const fromFile = options.file === undefined ? {} : await readConfigFile(options.file);
  checkKeys(fromFile, spec, options.file);
  for (const key of Object.keys(fromFile)) origins.set(key, options.file!);
  let values = deepMerge(structuredClone(spec.defaults), fromFile) as Record<string, unknown>;
  const overrides: Record<string, unknown> = {};
  for (const text of options.sets ?? []) {
    const { path, value } = parseSet(text);
    setPath(overrides, path, value);
    checkKeys(overrides, spec, '--set');
    origins.set(path[0]!, '--set');
  }
  values = deepMerge(values, overrides) as Record<string, unknown>;
  for (const key of spec.required) {
    if (values[key] === undefined || values[key] === null) {
      throw new ConfigError({
        key,
        source: options.file,
        message: `required: set it in the config file or with --set ${key}=…`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
  }
  return { values, file: options.file, origins };
}

/** The config as `--print-config` shows it (YAML, keys sorted as given). */
export function formatConfig(values: Record<string, unknown>): string {
  return YAML.stringify(JSON.parse(stableStringify(values)) as unknown);
}

/**
 * Re-throws an error from a package's validation (`config.schedule.learningRate`,
 * `options.epochs`, …) as a {@link ConfigError} that also names where the key was set.
 */
export function attributeError(error: unknown, config: ResolvedConfig): unknown {
  if (!InvalidArgumentError.isInstance(error) || ConfigError.isInstance(error)) return error;
  const parts = error.parameter.split('.');
  const index = parts.findIndex((part) => config.origins.has(part) || part in config.values);
  if (index < 0) return error;
  const key = parts.slice(index).join('.');
  const source = config.origins.get(parts[index]!) ?? 'defaults';
  return new ConfigError({
    key,
    source,
    message: error.message,
    code: RlvrError.isInstance(error) ? error.code : ErrorCode.INVALID_ARGUMENT,
    cause: error,
  });
}

/** Reads a typed value from a resolved config (a plain accessor; the packages validate). */
export function pick<T>(values: Record<string, unknown>, keys: readonly string[]): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (values[key] !== undefined) out[key] = values[key];
  return out as Partial<T>;
}
