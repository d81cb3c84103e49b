import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.ModelLoadError';
const symbol = Symbol.for(marker);

/**
 * A checkpoint, safetensors file, tokenizer or config could not be read or is malformed (code
 * `MODEL_LOAD_FAILED`). Names the file and what is wrong with it; the original error (if any) is the
 * `cause`.
 */
export class ModelLoadError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** The file or folder that failed to load (or `'<memory>'` for in-memory input). */
  readonly path: string;

  constructor(options: { path: string; reason: string; cause?: unknown }) {
    super(ErrorCode.MODEL_LOAD_FAILED, `Failed to load '${options.path}': ${options.reason}`, {
      cause: options.cause,
    });
    this.path = options.path;
  }

  /** True when `error` is a {@link ModelLoadError} from any copy of `@rlvr/model`. */
  static override isInstance(error: unknown): error is ModelLoadError {
    return RlvrError.hasMarker(error, marker);
  }
}
