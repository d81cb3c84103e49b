import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { NonFiniteError } from '../errors/non-finite-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { VERSION } from '../version.js';
import { validateOptions } from './options.js';
import {
  validateFiniteArray,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateRagged,
} from './validate.js';

const context = { parameter: 'p', functionName: 'f' };

describe('validators', () => {
  it('should return valid values unchanged', () => {
    expect(validateInteger(3, { ...context, min: 0 })).toBe(3);
    expect(validateNumber(0.5, { ...context, min: 0, max: 1 })).toBe(0.5);
    expect(validateOneOf('a', ['a', 'b'], context)).toBe('a');
    expect(validateFiniteArray(new Float32Array([1, 2]), context)).toHaveLength(2);
    expect(validateRagged([[1], [2, 3]], context)).toHaveLength(2);
    expect(validateOptions(undefined, context)).toEqual({});
    expect(validateFiniteArray([-Infinity], { ...context, allowInfinity: 'negative' })).toEqual([
      -Infinity,
    ]);
  });

  it('should describe ranges and name the parameter', () => {
    expect(() => validateInteger(1, { ...context, min: 2 })).toThrow(
      "Invalid argument for parameter 'p' of f(): expected an integer >= 2, got 1",
    );
    expect(() => validateNumber(1, { ...context, min: 0, max: 1, exclusiveMax: true })).toThrow(
      'expected a finite number in [0, 1), got 1',
    );
    expect(() => validateNumber(Number.POSITIVE_INFINITY, context)).toThrow(InvalidArgumentError);
    expect(() => validateOneOf('c', ['a', 'b'], context)).toThrow(
      "expected one of 'a', 'b', got \"c\"",
    );
    expect(() => validateOptions(5, context)).toThrow('expected an options object');
  });

  it('should report shape and finiteness problems with indices', () => {
    expect(() => validateFiniteArray([1, 2], { ...context, length: 3 })).toThrow(
      ShapeMismatchError,
    );
    expect(() => validateFiniteArray([1, Number.NaN], context)).toThrow(NonFiniteError);
    expect(() => validateFiniteArray([1, Number.NaN], context)).toThrow(/p\[1\]/);
    expect(() => validateFiniteArray('12', context)).toThrow(/an array of numbers/);
    expect(() => validateRagged([[1], [Infinity]], context)).toThrow(/p\[1\]\[0\]/);
    expect(() => validateRagged([[1]], { ...context, shapeOf: [[1, 2]] })).toThrow(/p\[0\]/);
    expect(() => validateRagged([[1], 2], context)).toThrow(/p\[1\]/);
  });
});

describe('VERSION', () => {
  it('should be a version string', () => {
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });
});
