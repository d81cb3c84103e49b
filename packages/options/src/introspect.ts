import type * as z from 'zod/mini';
import type { Schema } from './fields.js';

type Def = {
  type: string;
  innerType?: Schema;
  shape?: Record<string, Schema>;
  element?: Schema;
  valueType?: Schema;
  defaultValue?: unknown;
};

const defOf = (schema: Schema): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const WRAPPERS = new Set([
  'optional',
  'default',
  'prefault',
  'nullable',
  'readonly',
  'nonoptional',
]);

/** `schema` and the schemas it wraps (optional, default, nullable, …), outermost first. */
export function layers(schema: Schema): Schema[] {
  const out = [schema];
  let current = schema;
  while (WRAPPERS.has(defOf(current).type) && defOf(current).innerType) {
    current = defOf(current).innerType!;
    out.push(current);
  }
  return out;
}

/** The innermost schema under the wrappers. */
export function unwrap(schema: Schema): Schema {
  return layers(schema).at(-1)!;
}

/**
 * The fields of an object schema (under its wrappers; in a union, of the branch whose
 * discriminator `value` has, else of its first object branch), or `undefined` for another kind.
 */
export function shapeOf(schema: Schema, value?: unknown): Record<string, Schema> | undefined {
  const def = defOf(unwrap(schema)) as Def & { options?: Schema[]; discriminator?: string };
  if (def.type === 'object') return def.shape;
  if (def.type !== 'union') return undefined;
  // a discriminated union: the branch whose tag the value has
  const tag = def.discriminator === undefined ? undefined : valueAt(value, [def.discriminator]);
  const tagged = (def.options ?? []).find((option) => {
    const values = (option as unknown as { _zod: { propValues?: Record<string, Set<unknown>> } })
      ._zod.propValues?.[def.discriminator ?? ''];
    return tag !== undefined && values?.has(tag) === true;
  });
  if (tagged !== undefined) return shapeOf(tagged);
  for (const option of def.options ?? []) {
    const shape = shapeOf(option);
    if (shape !== undefined) return shape;
  }
  return undefined;
}

/**
 * The schema at `path` below `schema` (object fields, array elements, record values; in a union,
 * the first branch that has the path).
 */
export function schemaAt(schema: Schema, path: readonly PropertyKey[]): Schema | undefined {
  if (path.length === 0) return schema;
  const [key, ...rest] = path;
  const def = defOf(unwrap(schema)) as Def & { options?: Schema[] };
  let next: Schema | undefined;
  if (def.type === 'object') next = def.shape?.[String(key)];
  else if (def.type === 'array') next = def.element;
  else if (def.type === 'record') next = def.valueType;
  else if (def.type === 'union') {
    for (const option of def.options ?? []) {
      const found = schemaAt(option, path);
      if (found !== undefined) return found;
    }
  }
  return next === undefined ? undefined : schemaAt(next, rest);
}

/** The value at `path` below `value` (`undefined` where the path leaves it). */
export function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** The default of a field (`withDefault`), if it has one. */
export function defaultOf(schema: Schema): { value: unknown } | undefined {
  for (const layer of layers(schema)) {
    const def = defOf(layer);
    if (def.type === 'default' || def.type === 'prefault') return { value: def.defaultValue };
  }
  return undefined;
}

type Unwrapped<T> = T extends z.ZodMiniOptional<infer Inner> ? Unwrapped<Inner> : T;
type FieldDefaults<T> =
  T extends z.ZodMiniDefault<infer Inner>
    ? z.output<Inner>
    : Unwrapped<T> extends z.ZodMiniObject<infer Shape>
      ? keyof DefaultsOf<Shape> extends never
        ? never
        : DefaultsOf<Shape>
      : never;
/** The defaults of an object shape: fields with a default, and nested objects that have some. */
export type DefaultsOf<Shape> = {
  readonly [Key in keyof Shape as [FieldDefaults<Shape[Key]>] extends [never]
    ? never
    : Key]: FieldDefaults<Shape[Key]>;
};

/**
 * The defaults of an options schema, frozen: each field's default, and for a nested options
 * object (optional or not) the defaults of its fields when it has any.
 */
export function defaultsOf<Shape extends z.core.$ZodLooseShape>(
  schema: z.ZodMiniObject<Shape>,
): DefaultsOf<Shape> {
  return collectDefaults(schema) as DefaultsOf<Shape>;
}

function collectDefaults(schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(shapeOf(schema) ?? {})) {
    const own = defaultOf(field);
    if (own !== undefined) {
      out[key] = Object.freeze(own.value);
      continue;
    }
    if (shapeOf(field) !== undefined) {
      const nested = collectDefaults(field);
      if (Object.keys(nested).length > 0) out[key] = nested;
    }
  }
  return Object.freeze(out);
}
