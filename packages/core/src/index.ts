export {
  AbortedError,
  describeValue,
  ErrorCode,
  InvalidArgumentError,
  NonFiniteError,
  RlvrError,
  ShapeMismatchError,
  UnsupportedSpecificationError,
} from './errors/index.js';
export * from './math/index.js';
export type { Rng, RngState } from './rng/rng.js';
export { createRng } from './rng/rng.js';
export * from './types/index.js';
export type { ArgumentContext } from './validation/validate.js';
export {
  validateFiniteArray,
  validateInteger,
  validateNullableFiniteArray,
  validateNumber,
  validateOneOf,
  validateOptions,
  validateRagged,
} from './validation/validate.js';
export { VERSION } from './version.js';
