import * as mini from 'zod/mini';

/**
 * The zod/mini constructors the packages use beside the option fields, so that this package holds
 * the only run-time copy of zod (bundled into its build: no zod module graph to load at import).
 */
export const zod = {
  array: mini.array,
  discriminatedUnion: mini.discriminatedUnion,
  extend: mini.extend,
  literal: mini.literal,
  omit: mini.omit,
  optional: mini.optional,
  partial: mini.partial,
  strictObject: mini.strictObject,
  string: mini.string,
  union: mini.union,
  unknown: mini.unknown,
};

export type {
  /** What a caller may write for an options schema (defaults optional). */
  input as OptionsInput,
  /** An options schema's value after `parse` (defaults filled in). */
  output as OptionsOutput,
} from 'zod/mini';
