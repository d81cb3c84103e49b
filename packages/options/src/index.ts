export { defineOptions, type OptionsDefinition } from './define.js';
export {
  aliasesOf,
  asserted,
  asserterOf,
  boolean,
  custom,
  defaultText,
  descriptions,
  documented,
  expectedText,
  expecting,
  type FieldDoc,
  func,
  integer,
  number,
  object,
  oneOf,
  optional,
  required,
  type Schema,
  text,
  withDefault,
} from './fields.js';
export {
  type DefaultsOf,
  defaultOf,
  defaultsOf,
  layers,
  schemaAt,
  shapeOf,
  unwrap,
} from './introspect.js';
export { toJsonSchema } from './json-schema.js';
export { type ParseContext, parseOptions } from './parse.js';
export { sampleRequestFields } from './sample-request.js';
export {
  type FieldSummary,
  fieldSummary,
  fillOptionsTables,
  optionsTable,
  syncOptionsTables,
} from './tables.js';
export { VERSION } from './version.js';
export { type OptionsInput, type OptionsOutput, zod } from './zod.js';
