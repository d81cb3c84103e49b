import { type ErrorCode, RlvrError } from '@rlvr/core';

const marker = 'rlvr.error.ConfigError';
const symbol = Symbol.for(marker);

/**
 * A CLI config (file or `--set`) is wrong: an unknown key, a value of the wrong type, a missing
 * required key. The message names the key, the closest valid one when there is one, and where the
 * value came from (the config file, or `--set`).
 */
export class ConfigError extends RlvrError {
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: read through the global marker by isInstance
  private readonly [symbol] = true;
  /** Dotted path of the offending key. */
  readonly key: string;
  /** The config file the key came from, `--set`, or undefined (a default or a required key). */
  readonly source: string | undefined;

  constructor(options: {
    key: string;
    message: string;
    source?: string | undefined;
    code: ErrorCode;
    cause?: unknown;
  }) {
    const where = options.source === undefined ? '' : ` (in ${options.source})`;
    super(options.code, `config key '${options.key}'${where}: ${options.message}`, {
      cause: options.cause,
    });
    this.key = options.key;
    this.source = options.source;
  }

  /** True when `error` is a {@link ConfigError} from any copy of `@rlvr/cli`. */
  static override isInstance(error: unknown): error is ConfigError {
    return RlvrError.hasMarker(error, marker);
  }
}
