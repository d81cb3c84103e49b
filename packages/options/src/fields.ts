import { describeRange } from '@rlvr/core';
import * as z from 'zod/mini';

/** Any zod (mini or classic) schema. */
export type Schema = z.core.$ZodType;

/** What a field's documentation says: a README table row and the JSON Schema `description`. */
export type FieldDoc = {
  /** One sentence: what the option does. */
  description: string;
  /**
   * The default as a reader should see it when it is not a value (`'no cap'`, `'0 (with prefer:
   * random)'`); a field with a zod default shows that value without this.
   */
  defaultText?: string;
};

const expectedTexts = new WeakMap<Schema, string>();
const asserters = new WeakMap<Schema, (value: unknown, parameter: string) => void>();
const defaultTexts = new WeakMap<Schema, string>();
const aliasMaps = new WeakMap<Schema, Readonly<Record<string, string>>>();

/** The descriptions, read by `z.toJSONSchema` (as `metadata`) and by the README tables. */
export const descriptions = z.registry<{ description: string }>();

/**
 * Registers `expected` as what an error names when `schema` refuses a value (`an integer >= 1`),
 * as @rlvr/core's validators write it. Every field built here has one.
 */
export function expecting<T extends Schema>(schema: T, expected: string): T {
  expectedTexts.set(schema, expected);
  return schema;
}

/** The `expected` text registered for `schema` (see {@link expecting}), if any. */
export function expectedText(schema: Schema): string | undefined {
  return expectedTexts.get(schema);
}

/** The `defaultText` of a field's documentation, if any. */
export function defaultText(schema: Schema): string | undefined {
  return defaultTexts.get(schema);
}

/** Attaches a field's documentation (see {@link FieldDoc}). */
export function documented<T extends Schema>(schema: T, doc: string | FieldDoc): T {
  const { description, defaultText: text } = typeof doc === 'string' ? { description: doc } : doc;
  descriptions.add(schema, { description });
  if (text !== undefined) defaultTexts.set(schema, text);
  return schema;
}

/** An integer in `[min, max]` (`validateInteger`'s check and message). */
export function integer(range: { min?: number; max?: number } = {}) {
  const { min, max } = range;
  const checks: z.core.$ZodCheck<number>[] = [];
  if (min !== undefined) checks.push(z.gte(min));
  if (max !== undefined) checks.push(z.lte(max));
  const schema = checks.length > 0 ? z.int().check(...checks) : z.int();
  return expecting(
    schema,
    describeRange(
      'an integer',
      min ?? Number.MIN_SAFE_INTEGER,
      max ?? Number.MAX_SAFE_INTEGER,
      true,
      true,
    ),
  );
}

/** A finite number in the range (`validateNumber`'s check and message). */
export function number(
  range: { min?: number; max?: number; exclusiveMin?: boolean; exclusiveMax?: boolean } = {},
) {
  const { min, max, exclusiveMin = false, exclusiveMax = false } = range;
  const checks: z.core.$ZodCheck<number>[] = [];
  if (min !== undefined) checks.push(exclusiveMin ? z.gt(min) : z.gte(min));
  if (max !== undefined) checks.push(exclusiveMax ? z.lt(max) : z.lte(max));
  const schema = checks.length > 0 ? z.number().check(...checks) : z.number();
  return expecting(
    schema,
    describeRange(
      'a finite number',
      min ?? -Infinity,
      max ?? Infinity,
      !exclusiveMin,
      !exclusiveMax,
    ),
  );
}

/** One of `values` (`validateOneOf`'s check and message). */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return expecting(z.enum(values), `one of ${values.map((item) => `'${item}'`).join(', ')}`);
}

/** `true` or `false`. */
export function boolean() {
  return expecting(z.boolean(), 'a boolean');
}

/** A string (non-empty unless `allowEmpty`); `expected` names what it is (`'a folder path'`). */
export function text(expected: string, options: { allowEmpty?: boolean } = {}) {
  return expecting(options.allowEmpty ? z.string() : z.string().check(z.minLength(1)), expected);
}

/** A value of type `T` that `check` accepts (functions, samplers, objects zod does not model). */
export function custom<T>(check: (value: unknown) => boolean, expected: string) {
  return expecting(z.custom<T>(check), expected);
}

/**
 * A value checked by an existing validator that throws its own typed error (core's
 * `assertSampler`, a validator of records that names the bad index): the error it throws is the
 * one `parse` reports, in the field's place in the declaration order; `expected` is what the
 * README table says it takes.
 */
export function asserted<T>(assert: (value: unknown, parameter: string) => void, expected: string) {
  const schema = z.custom<T>((value) => {
    try {
      assert(value, '');
      return true;
    } catch {
      return false;
    }
  });
  asserters.set(schema, assert);
  return expecting(schema, expected);
}

/** The validator registered by {@link asserted} for `schema`, if any. */
export function asserterOf(
  schema: Schema,
): ((value: unknown, parameter: string) => void) | undefined {
  return asserters.get(schema);
}

/** A function (`expected` names it: `'a reward function'`). */
export function func<T extends (...args: never[]) => unknown>(expected: string) {
  return custom<T>((value) => typeof value === 'function', expected);
}

/**
 * An options object with exactly these keys (any other is `UNKNOWN_OPTION`); `aliases` maps wrong
 * names to the right one for the "did you mean" hint of a nested object (never accepted; the
 * top level's are the parse context's).
 */
export function object<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  options: { aliases?: Readonly<Record<string, string>> } = {},
) {
  const schema = expecting(z.strictObject(shape), 'an options object');
  if (options.aliases !== undefined) aliasMaps.set(schema, options.aliases);
  return schema;
}

/** The `aliases` registered by {@link object} for `schema`, if any. */
export function aliasesOf(schema: Schema): Readonly<Record<string, string>> | undefined {
  return aliasMaps.get(schema);
}

/** An optional field, documented. */
export function optional<T extends Schema>(schema: T, doc: string | FieldDoc) {
  return documented(z.optional(schema), doc);
}

/** A field with a default (applied when it is absent or `undefined`), documented. */
export function withDefault<T extends Schema>(
  schema: T,
  value: z.core.util.NoUndefined<z.core.output<T>>,
  doc: string | FieldDoc,
) {
  return documented(z._default(schema, value), doc);
}

/** A required field, documented. */
export function required<T extends Schema>(schema: T, doc: string | FieldDoc): T {
  return documented(schema, doc);
}
