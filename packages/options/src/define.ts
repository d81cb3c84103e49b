import type * as z from 'zod/mini';
import { object } from './fields.js';
import { type DefaultsOf, defaultsOf } from './introspect.js';
import { type ParseContext, parseOptions } from './parse.js';

/** One options object declared once: its schema, keys, defaults and validation. */
export type OptionsDefinition<Shape extends z.core.$ZodLooseShape> = {
  /** The strict object schema (for JSON Schema, README tables, and configs built from it). */
  readonly schema: z.ZodMiniObject<Shape, z.core.$strict>;
  /** Every key the options object accepts, in declaration order. */
  readonly keys: readonly Extract<keyof Shape, string>[];
  /** The defaults (see `defaultsOf`), frozen. */
  readonly defaults: DefaultsOf<Shape>;
  /** Validates with @rlvr/core's typed errors (see `parseOptions`); returns defaults filled in. */
  parse(value: unknown): z.output<z.ZodMiniObject<Shape, z.core.$strict>>;
};

/**
 * Declares an options object once. The exported type is `z.input<typeof X.schema>` (what callers
 * write) and `z.output<…>` (after defaults); the key list, the defaults, the README table and the
 * JSON Schema all come from the same shape. Cross-field rules (ineffective combinations, ranges
 * that depend on other fields) stay explicit, next to the call of `parse`.
 *
 * @example
 * ```ts
 * const FILTER = defineOptions(
 *   { maxPerPrompt: optional(integer({ min: 1 }), 'Keep at most this many traces per prompt.') },
 *   { parameter: 'options', functionName: 'filterTraces' },
 * );
 * FILTER.parse({ maxPerPrompt: 0 }); // INVALID_ARGUMENT: expected an integer >= 1, got 0
 * ```
 */
export function defineOptions<const Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  context: ParseContext,
): OptionsDefinition<Shape> {
  const schema = object(shape);
  return Object.freeze({
    schema,
    keys: Object.freeze(Object.keys(shape)) as readonly Extract<keyof Shape, string>[],
    defaults: defaultsOf(schema),
    parse: (value: unknown) => parseOptions(schema, value, context),
  });
}
