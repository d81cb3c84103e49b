import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { NonFiniteError } from '../errors/non-finite-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';

/** Where a validated value comes from: used to build error messages. */
export type ArgumentContext = { parameter: string; functionName?: string };

/**
 * Checks that `value` is an integer within `[min, max]` and returns it.
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the parameter.
 */
export function validateInteger(
  value: unknown,
  context: ArgumentContext & { min?: number; max?: number },
): number {
  const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = context;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError({
      ...context,
      value,
      expected: describeRange('an integer', min, max, true, true),
    });
  }
  return value;
}

/**
 * Checks that `value` is a finite number within the range and returns it.
 * `exclusiveMin`/`exclusiveMax` make the bounds strict.
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the parameter.
 */
export function validateNumber(
  value: unknown,
  context: ArgumentContext & {
    min?: number;
    max?: number;
    exclusiveMin?: boolean;
    exclusiveMax?: boolean;
  },
): number {
  const { min = -Infinity, max = Infinity, exclusiveMin = false, exclusiveMax = false } = context;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (exclusiveMin ? value > min : value >= min) &&
    (exclusiveMax ? value < max : value <= max);
  if (!ok) {
    throw new InvalidArgumentError({
      ...context,
      value,
      expected: describeRange('a finite number', min, max, !exclusiveMin, !exclusiveMax),
    });
  }
  return value as number;
}

/**
 * Checks that `value` is one of `allowed` and returns it.
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` listing the allowed values.
 */
export function validateOneOf<T extends string>(
  value: unknown,
  allowed: readonly T[],
  context: ArgumentContext,
): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidArgumentError({
      ...context,
      value,
      expected: `one of ${allowed.map((item) => `'${item}'`).join(', ')}`,
    });
  }
  return value as T;
}

/** True for arrays and typed arrays of numbers (not for strings). */
export function isNumericArrayLike(value: unknown): value is ArrayLike<number> {
  return (
    Array.isArray(value) ||
    (ArrayBuffer.isView(value) &&
      !(value instanceof DataView) &&
      typeof (value as { length?: unknown }).length === 'number')
  );
}

/**
 * Checks that `value` is an array (or typed array) of finite numbers, optionally of a given length.
 * @throws {InvalidArgumentError} when it is not an array; {@link ShapeMismatchError} on a wrong
 * length; {@link NonFiniteError} on NaN/±Infinity (naming the index).
 */
export function validateFiniteArray(
  value: unknown,
  context: ArgumentContext & { length?: number; allowInfinity?: 'negative' | false },
): ArrayLike<number> {
  if (!isNumericArrayLike(value)) {
    throw new InvalidArgumentError({ ...context, value, expected: 'an array of numbers' });
  }
  if (context.length !== undefined && value.length !== context.length) {
    throw new ShapeMismatchError({
      ...context,
      expected: `length ${context.length}`,
      actual: `length ${value.length}`,
    });
  }
  for (let index = 0; index < value.length; index++) {
    const item = value[index] as unknown;
    if (typeof item !== 'number') {
      throw new InvalidArgumentError({
        ...context,
        parameter: `${context.parameter}[${index}]`,
        value: item,
        expected: 'a number',
      });
    }
    if (!Number.isFinite(item) && !(context.allowInfinity === 'negative' && item === -Infinity)) {
      throw new NonFiniteError({ ...context, index, value: item });
    }
  }
  return value;
}

/**
 * Checks a ragged 2-D array (one row per sequence) of finite numbers. When `shapeOf` is given, every
 * row must have the same length as the corresponding row of `shapeOf`.
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError}
 */
export function validateRagged(
  value: unknown,
  context: ArgumentContext & {
    shapeOf?: readonly ArrayLike<number>[];
    shapeName?: string;
    allowInfinity?: 'negative' | false;
  },
): readonly ArrayLike<number>[] {
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError({
      ...context,
      value,
      expected: 'an array of per-sequence number arrays',
    });
  }
  const { shapeOf } = context;
  if (shapeOf && value.length !== shapeOf.length) {
    throw new ShapeMismatchError({
      ...context,
      expected: `${shapeOf.length} sequences (like '${context.shapeName ?? 'logprobs'}')`,
      actual: `${value.length} sequences`,
    });
  }
  for (let row = 0; row < value.length; row++) {
    const sequence = value[row] as unknown;
    if (!isNumericArrayLike(sequence)) {
      throw new InvalidArgumentError({
        ...context,
        parameter: `${context.parameter}[${row}]`,
        value: sequence,
        expected: 'an array of numbers',
      });
    }
    const expectedLength = shapeOf?.[row]?.length;
    if (expectedLength !== undefined && sequence.length !== expectedLength) {
      throw new ShapeMismatchError({
        ...context,
        parameter: `${context.parameter}[${row}]`,
        expected: `length ${expectedLength} (like '${context.shapeName ?? 'logprobs'}[${row}]')`,
        actual: `length ${sequence.length}`,
      });
    }
    for (let column = 0; column < sequence.length; column++) {
      const item = sequence[column] as unknown;
      if (typeof item !== 'number') {
        throw new InvalidArgumentError({
          ...context,
          parameter: `${context.parameter}[${row}][${column}]`,
          value: item,
          expected: 'a number',
        });
      }
      if (!Number.isFinite(item) && !(context.allowInfinity === 'negative' && item === -Infinity)) {
        throw new NonFiniteError({ ...context, index: [row, column], value: item });
      }
    }
  }
  return value as ArrayLike<number>[];
}

/**
 * Checks that every entry of an array is a finite number or `null` (e.g. rewards, where `null`
 * means "not applicable").
 * @throws {InvalidArgumentError} naming the bad entry; {@link NonFiniteError} for NaN/±Infinity.
 */
export function validateNullableFiniteArray(
  values: readonly unknown[],
  context: ArgumentContext,
): (number | null)[] {
  values.forEach((value, index) => {
    if (value === null) return;
    if (typeof value !== 'number') {
      throw new InvalidArgumentError({
        ...context,
        parameter: `${context.parameter}[${index}]`,
        value,
        expected: 'a number or null',
      });
    }
    if (!Number.isFinite(value)) throw new NonFiniteError({ ...context, index, value });
  });
  return values as (number | null)[];
}

/**
 * The range part of an `expected` text as {@link validateInteger} and {@link validateNumber} write
 * it (`an integer >= 1`, `a finite number in (0, 1]`), for validators built elsewhere that must
 * say the same.
 */
export function describeRange(
  kind: string,
  min: number,
  max: number,
  minInclusive: boolean,
  maxInclusive: boolean,
): string {
  const lower = min > Number.MIN_SAFE_INTEGER && min !== -Infinity;
  const upper = max < Number.MAX_SAFE_INTEGER && max !== Infinity;
  if (lower && upper) {
    return `${kind} in ${minInclusive ? '[' : '('}${min}, ${max}${maxInclusive ? ']' : ')'}`;
  }
  if (lower) return `${kind} ${minInclusive ? '>=' : '>'} ${min}`;
  if (upper) return `${kind} ${maxInclusive ? '<=' : '<'} ${max}`;
  return kind;
}

export { validateOptions } from './options.js';
