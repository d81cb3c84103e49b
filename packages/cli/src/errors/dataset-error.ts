import { ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.DatasetError';
const symbol = Symbol.for(marker);

/**
 * A dataset file cannot be read or one of its rows is invalid. The message starts with
 * `file:line` (JSONL and CSV: the line in the file; JSON and Parquet: the 1-based row).
 */
export class DatasetError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  readonly file: string;
  /** 1-based line (JSONL, CSV) or row (JSON, Parquet); undefined for whole-file problems. */
  readonly line: number | undefined;

  constructor(options: { file: string; line?: number; message: string; cause?: unknown }) {
    const at = options.line === undefined ? options.file : `${options.file}:${options.line}`;
    super(ErrorCode.INVALID_ARGUMENT, `${at}: ${options.message}`, { cause: options.cause });
    this.file = options.file;
    this.line = options.line;
  }

  /** True when `error` is a {@link DatasetError} from any copy of `@rlvr/cli`. */
  static override isInstance(error: unknown): error is DatasetError {
    return RlvrError.hasMarker(error, marker);
  }
}
