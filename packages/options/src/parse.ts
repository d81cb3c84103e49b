import { assertKnownKeys, InvalidArgumentError, validateOptions } from '@rlvr/core';
import * as z from 'zod/mini';
import { asserterOf, expectedText, type Schema } from './fields.js';
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
  const { functionName, aliases } = context;
  const input = validateOptions<object>(value, {
    parameter: context.parameter,
    ...(functionName === undefined ? {} : { functionName }),
  });
  const result = z.safeParse(schema, input);
  if (result.success) return result.data;
  let issue = firstIssue(result.error.issues);
  // A required options object left out reads as {} (as validateOptions(undefined) does): the
  // error names its first required field.
  for (;;) {
    const at = schemaAt(schema, issue.path);
    if (issue.code !== 'invalid_type' || at === undefined || shapeOf(at) === undefined) break;
    if (valueAt(input, issue.path) !== undefined) break;
    const inner = z.safeParse(unwrap(at), {});
    if (inner.success) break;
    const next = firstIssue(inner.error.issues);
    issue = { ...next, path: [...issue.path, ...next.path] };
  }
  if (issue.code === 'unrecognized_keys') {
    assertKnownKeys(valueAt(input, issue.path) as object, {
      parameter: join(context.parameter, issue.path),
      ...(functionName === undefined ? {} : { functionName }),
      known: Object.keys(shapeOf(schemaAt(schema, issue.path) ?? schema) ?? {}),
      ...(aliases === undefined || issue.path.length > 0 ? {} : { aliases }),
    });
  }
  const at = schemaAt(schema, issue.path);
  const assert = at === undefined ? undefined : layers(at).map(asserterOf).find(Boolean);
  assert?.(valueAt(input, issue.path), join(context.parameter, issue.path));
  throw new InvalidArgumentError({
    parameter: join(context.parameter, issue.path),
    ...(functionName === undefined ? {} : { functionName }),
    value: valueAt(input, issue.path),
    expected: expectedAt(schema, issue.path, issue.message),
  });
}
