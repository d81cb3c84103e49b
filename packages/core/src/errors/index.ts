export { AbortedError } from './aborted-error.js';
export { ErrorCode } from './error-codes.js';
export { describeValue, InvalidArgumentError } from './invalid-argument-error.js';
export { NonFiniteError } from './non-finite-error.js';
export { OverwriteRefusedError } from './overwrite-refused-error.js';
export { ResumeMismatchError } from './resume-mismatch-error.js';
export { RlvrError } from './rlvr-error.js';
export { ShapeMismatchError } from './shape-mismatch-error.js';
export { UnsupportedSpecificationError } from './unsupported-specification-error.js';
