import { assertKnownKeys, InvalidArgumentError, validateOptions } from '@rlvr/core';
import * as z from 'zod/mini';
import { expectedText, type Schema } from './fields.js';
import { layers, schemaAt, shapeOf, valueAt } from './introspect.js';

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
  const issue = firstIssue(result.error.issues);
  if (issue.code === 'unrecognized_keys') {
    const at = valueAt(input, issue.path) as object;
    assertKnownKeys(at, {
      parameter: join(context.parameter, issue.path),
      ...(functionName === undefined ? {} : { functionName }),
      known: Object.keys(shapeOf(schemaAt(schema, issue.path) ?? schema) ?? {}),
      ...(aliases === undefined || issue.path.length > 0 ? {} : { aliases }),
    });
  }
  throw new InvalidArgumentError({
    parameter: join(context.parameter, issue.path),
    ...(functionName === undefined ? {} : { functionName }),
    value: valueAt(input, issue.path),
    expected: expectedAt(schema, issue.path, issue.message),
  });
}
