import type { ToolResultStatus } from '@rlvr/core';

const marker = Symbol.for('rlvr.tools.ToolFault');

/**
 * Thrown by a tool's `execute` to report a fault with its own status (the sandbox tool throws
 * `timeout` or `output-limit` when its process hit a limit); any other throw is `error`.
 */
export class ToolFault extends Error {
  readonly [marker] = true;
  constructor(
    readonly status: Extract<
      ToolResultStatus,
      'error' | 'timeout' | 'output-limit' | 'invalid-input'
    >,
    message: string,
  ) {
    super(message);
    this.name = 'ToolFault';
  }

  /** True for a {@link ToolFault} from any copy of this package. */
  static isInstance(error: unknown): error is ToolFault {
    return typeof error === 'object' && error !== null && marker in error;
  }
}
