/**
 * Every error code an rlvr package throws. Codes are stable API: match on `error.code`, never on the
 * message text.
 */
export const ErrorCode = {
  /** An argument of a public function was missing, of the wrong type, or out of range. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** Arrays that must line up (same length, same ragged shape) do not. */
  SHAPE_MISMATCH: 'SHAPE_MISMATCH',
  /** A number that must be finite (reward, logprob, weight) is NaN or infinite. */
  NON_FINITE: 'NON_FINITE',
  /** A checkpoint, tokenizer or ONNX graph could not be read or is malformed. */
  MODEL_LOAD_FAILED: 'MODEL_LOAD_FAILED',
  /** An implementation declares a `specificationVersion` this package does not support. */
  UNSUPPORTED_SPECIFICATION: 'UNSUPPORTED_SPECIFICATION',
  /** A requested feature, backend or execution provider is not available here. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** A verifier itself failed (not the model output it was checking). */
  VERIFIER_FAILED: 'VERIFIER_FAILED',
  /** An operation did not finish within its time budget. */
  TIMEOUT: 'TIMEOUT',
  /** An operation was cancelled through an `AbortSignal`. */
  ABORTED: 'ABORTED',
  /** An options object has a key the function does not know (the message names the closest one). */
  UNKNOWN_OPTION: 'UNKNOWN_OPTION',
  /** An option has no effect in the given combination (e.g. `keepLast` without `outputDir`). */
  INEFFECTIVE_OPTION: 'INEFFECTIVE_OPTION',
  /** A write would delete, truncate or overwrite a file this run did not create. */
  WOULD_OVERWRITE: 'WOULD_OVERWRITE',
  /** A resumed run or reused artefact was made with settings that differ from the current ones. */
  RESUME_MISMATCH: 'RESUME_MISMATCH',
  /** A run cannot make progress (e.g. every update was skipped `maxConsecutiveSkips` times in a row). */
  TRAINING_STALLED: 'TRAINING_STALLED',
  /**
   * A model or step would need more memory than the limit (checked before any work: the message
   * names the estimate by part, the limit and settings that would fit).
   */
  MEMORY_LIMIT: 'MEMORY_LIMIT',
} as const;

/** Union of the values of {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
