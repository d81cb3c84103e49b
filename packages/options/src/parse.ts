import { assertKnownKeys, InvalidArgumentError, validateOptions } from '@rlvr/core';
import * as z from 'zod/mini';
import { aliasesOf, asserterOf, expectedText, type Schema } from './fields.js';
import { layers, schemaAt, shapeOf, unwrap, valueAt } from './introspect.js';

/** Where options come from, for the error messages (as @rlvr/core's `validateOptions`). */
export type ParseContext = {
  /** The options' parameter name (`'options'`, `'config'`); nested keys are dotted below it. */
  parameter: string;
  functionName?: string;
  /** Wrong names mapped to the right one, for the "did you mean" hint (never accepted). */
  aliases?: Readonly<Record<string, string>>;
};

type Issue = z.core.$ZodIssue;

const join = (parameter: string, path: readonly PropertyKey[]): string =>
  path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    return out === '' ? String(key) : `${out}.${String(key)}`;
  }, parameter);

const isPrefix = (prefix: readonly PropertyKey[], path: readonly PropertyKey[]): boolean =>
  prefix.length <= path.length && prefix.every((key, index) => path[index] === key);

/**
 * The issue to report, in the order hand-written validation checked: an object's unknown keys
 * before anything inside it, then fields in the order the schema declares them.
 */
function firstIssue(issues: readonly Issue[]): Issue {
  const first = issues[0]!;
  const unknown = issues
    .filter((issue) => issue.code === 'unrecognized_keys' && isPrefix(issue.path, first.path))
    .sort((a, b) => a.path.length - b.path.length);
  return unknown[0] ?? first;
}

/** The `expected` text of the schema at `path`: its own, or that of a schema it wraps. */
function expectedAt(schema: Schema, path: readonly PropertyKey[], fallback: string): string {
  const at = schemaAt(schema, path);
  if (at === undefined) return fallback;
  for (const layer of layers(at)) {
    const text = expectedText(layer);
    if (text !== undefined) return text;
  }
  return fallback;
}

/**
 * The aliases of the object schema at hand (see `object`): its own, or in a union those of the
 * branch whose keys `shapeOf` names for `value`.
 */
function aliasesAt(schema: Schema, value: unknown): Readonly<Record<string, string>> | undefined {
  const own = layers(schema)
    .map(aliasesOf)
    .find((found) => found !== undefined);
  if (own !== undefined) return own;
  const shape = shapeOf(schema, value);
  const options = (unwrap(schema) as unknown as { _zod: { def: { options?: Schema[] } } })._zod.def
    .options;
  const branch = options?.find((option) => shape !== undefined && shapeOf(option) === shape);
  return branch === undefined ? undefined : aliasesAt(branch, value);
}

/**
 * Validates `value` against an options schema and returns it with the defaults filled in.
 * Errors are @rlvr/core's, with its messages: `UNKNOWN_OPTION` naming the key and the closest
 * valid one (`assertKnownKeys`), `INVALID_ARGUMENT` naming the dotted parameter, what the field
 * expects (as `validateInteger`, `validateNumber`, `validateOneOf` write it) and the value got.
 * `undefined` is an empty options object; a non-object is refused as `validateOptions` does.
 * @throws {InvalidArgumentError}
 */
export function parseOptions<T extends Schema>(
  schema: T,
  value: unknown,
  context: ParseContext,
): z.output<T> {
  const { functionName } = context;
  const input = validateOptions<object>(value, {
    parameter: context.parameter,
    ...(functionName === undefined ? {} : { functionName }),
  });
  const result = z.safeParse(schema, input);
  if (result.success) return result.data;
  return report(schema, [], firstIssue(result.error.issues), input, context);
}

/** The union branch the value was meant for: the first whose own type matched it. */
function branchOf(issue: Issue & { code: 'invalid_union' }): number {
  const index = issue.errors.findIndex(
    (errors) => !errors.some((inner) => inner.path.length === 0 && inner.code === 'invalid_type'),
  );
  return Math.max(index, 0);
}

/**
 * Throws the typed error for `issue`, raised by `base` (the schema at `basePath` of the options;
 * the issue's path is relative to it).
 */
function report(
  base: Schema,
  basePath: readonly PropertyKey[],
  issue: Issue,
  input: object,
  context: ParseContext,
): never {
  const { functionName, aliases } = context;
  const path = [...basePath, ...issue.path];
  const at = schemaAt(base, issue.path);
  const value = valueAt(input, path);
  const parameter = join(context.parameter, path);
  // A required options object left out reads as {} (as validateOptions(undefined) does): the
  // error names its first required field.
  if (issue.code === 'invalid_type' && at !== undefined && shapeOf(at) !== undefined) {
    const inner = value === undefined ? z.safeParse(unwrap(at), {}) : undefined;
    if (inner?.success === false) {
      return report(unwrap(at), path, firstIssue(inner.error.issues), input, context);
    }
  }
  // A discriminated union's tag: one of its values (as validateOneOf says it).
  const tags = (issue as { options?: unknown[] }).options;
  if (issue.code === 'invalid_union' && 'discriminator' in issue && Array.isArray(tags)) {
    throw new InvalidArgumentError({
      parameter,
      ...(functionName === undefined ? {} : { functionName }),
      value,
      expected: `one of ${tags.map((tag) => `'${String(tag)}'`).join(', ')}`,
    });
  }
  if (issue.code === 'invalid_union' && at !== undefined && issue.errors.length > 0) {
    const branch = branchOf(issue);
    const branches = (unwrap(at) as unknown as { _zod: { def: { options?: Schema[] } } })._zod.def
      .options;
    const inner = firstIssue(issue.errors[branch]!);
    const own = layers(at).map(expectedText).find(Boolean);
    // The union's own text for a value its branch refused as a whole ('' for a folder path);
    // the branch's error for anything inside it (a field, an unknown key).
    const inside = inner.path.length > 0 || inner.code === 'unrecognized_keys';
    if (branches?.[branch] !== undefined && (inside || own === undefined)) {
      return report(branches[branch]!, path, inner, input, context);
    }
  }
  if (issue.code === 'unrecognized_keys') {
    const own = aliasesAt(at ?? base, value);
    const hints = path.length === 0 ? (aliases ?? own) : own;
    assertKnownKeys(value as object, {
      parameter,
      ...(functionName === undefined ? {} : { functionName }),
      known: Object.keys(shapeOf(at ?? base, value) ?? {}),
      ...(hints === undefined ? {} : { aliases: hints }),
    });
  }
  const assert = at === undefined ? undefined : layers(at).map(asserterOf).find(Boolean);
  assert?.(value, parameter);
  throw new InvalidArgumentError({
    parameter,
    ...(functionName === undefined ? {} : { functionName }),
    value,
    expected: expectedAt(base, issue.path, issue.message),
  });
}
