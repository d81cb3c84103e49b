export {
  AbortedError,
  describeValue,
  ErrorCode,
  InvalidArgumentError,
  MemoryLimitError,
  NonFiniteError,
  OverwriteRefusedError,
  ResumeMismatchError,
  RlvrError,
  ShapeMismatchError,
  UnsupportedSpecificationError,
} from './errors/index.js';
export * from './math/index.js';
export type { Rng, RngState } from './rng/rng.js';
export { createRng } from './rng/rng.js';
export type { SettingsDifference } from './run/fingerprint.js';
export {
  diffSettings,
  fingerprint,
  hashFloat32,
  hashString,
  stableStringify,
} from './run/fingerprint.js';
export * from './types/index.js';
export type { OptionsContext } from './validation/options.js';
export {
  assertKnownKeys,
  closestOption,
  rejectIneffective,
  validateOptions,
} from './validation/options.js';
export type { ArgumentContext } from './validation/validate.js';
export {
  describeRange,
  validateFiniteArray,
  validateInteger,
  validateNullableFiniteArray,
  validateNumber,
  validateOneOf,
  validateRagged,
} from './validation/validate.js';
export { VERSION } from './version.js';
