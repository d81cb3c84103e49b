import { InvalidArgumentError, validateOneOf, validateOptions } from '@rlvr/core';
import { IF_EXISTS_VALUES, type IfExists } from './metrics-sink.js';

/** Checks a non-empty string path. @internal */
export function validatePath(value: unknown, parameter: string, functionName: string): string {
  if (typeof value !== 'string' || value === '' || value.includes('\0')) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'a non-empty file system path',
    });
  }
  return value;
}

/**
 * Validates `{ path, ifExists, …known }` of a file sink: unknown keys are `UNKNOWN_OPTION`.
 * @internal
 */
export function parseFileOptions(
  options: unknown,
  functionName: string,
  known: readonly string[],
  allowed: readonly IfExists[] = IF_EXISTS_VALUES,
): { path: string; ifExists: IfExists; rest: Record<string, unknown> } {
  if (options === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName,
      value: options,
      expected: 'an options object with a path',
    });
  }
  const checked = validateOptions<Record<string, unknown>>(options, {
    parameter: 'options',
    functionName,
    known,
  });
  const path = validatePath(checked.path, 'options.path', functionName);
  const ifExists =
    checked.ifExists === undefined
      ? 'refuse'
      : validateOneOf(checked.ifExists, allowed, { parameter: 'options.ifExists', functionName });
  return { path, ifExists, rest: checked };
}
