import * as z from 'zod/mini';
import { descriptions, type Schema } from './fields.js';

/**
 * The JSON Schema (draft 2020-12) of what a caller may write for `schema`: types, ranges, enums,
 * defaults, `additionalProperties: false` on every options object, and the field descriptions.
 * Values JSON cannot hold (functions, samplers) become `{}`: leave them out of a config schema.
 */
export function toJsonSchema(schema: Schema, options: { id?: string; title?: string } = {}) {
  const out = z.toJSONSchema(schema, {
    metadata: descriptions,
    unrepresentable: 'any',
    io: 'input',
  }) as Record<string, unknown>;
  const head: Record<string, unknown> = { $schema: out.$schema };
  if (options.id !== undefined) head.$id = options.id;
  if (options.title !== undefined) head.title = options.title;
  const { $schema: _schema, ...rest } = out;
  return { ...head, ...rest };
}
