import { type Schema, shapeOf } from '@rlvr/options';

const marked = new WeakSet<Schema>();

/**
 * Marks an options field whose `null` reads as "not set" (its default applies), as the trainer's
 * validation read it before the schemas (`value ?? default`); an ineffective-option check still
 * sees the `null` that was given. @internal
 */
export function nullAsUnset<T extends Schema>(field: T): T {
  marked.add(field);
  return field;
}

/**
 * `value` without the `null`s of the fields {@link nullAsUnset} marked, in nested option objects
 * too (a copy where anything is removed; `value` itself is not changed). @internal
 */
export function withoutUnsetNulls(schema: Schema, value: unknown): unknown {
  const shape = shapeOf(schema, value);
  if (shape === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
    return value;
  }
  let out: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(shape)) {
    const given = (value as Record<string, unknown>)[key];
    const next = given === null && marked.has(field) ? undefined : withoutUnsetNulls(field, given);
    if (next === given) continue;
    out ??= { ...(value as Record<string, unknown>) };
    if (next === undefined) delete out[key];
    else out[key] = next;
  }
  return out ?? value;
}
