import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  ErrorCode,
  InvalidArgumentError,
  NonFiniteError,
  RlvrError,
  ShapeMismatchError,
  UnsupportedSpecificationError,
} from './index.js';

describe('RlvrError', () => {
  it('should carry code, name, message and cause', () => {
    const cause = new Error('inner');
    const error = new RlvrError(ErrorCode.MODEL_LOAD_FAILED, 'could not read config.json', {
      cause,
    });
    expect(error.code).toBe('MODEL_LOAD_FAILED');
    expect(error.name).toBe('RlvrError[MODEL_LOAD_FAILED]');
    expect(error.message).toBe('could not read config.json');
    expect(error.cause).toBe(cause);
    expect(error).toBeInstanceOf(Error);
  });

  it('should recognize instances by marker, not by prototype', () => {
    const error = new InvalidArgumentError({ parameter: 'x', value: 1, expected: 'a string' });
    expect(RlvrError.isInstance(error)).toBe(true);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(ShapeMismatchError.isInstance(error)).toBe(false);
    expect(RlvrError.isInstance(new Error('plain'))).toBe(false);
    expect(RlvrError.isInstance(null)).toBe(false);
    expect(RlvrError.isInstance('RlvrError')).toBe(false);
    // An object from "another copy" of the package: same global marker, different class.
    const foreign = {
      [Symbol.for('rlvr.error')]: true,
      [Symbol.for('rlvr.error.InvalidArgumentError')]: true,
    };
    expect(InvalidArgumentError.isInstance(foreign)).toBe(true);
  });
});

describe('InvalidArgumentError', () => {
  it('should name the parameter, the function, the expectation and the value', () => {
    const error = new InvalidArgumentError({
      parameter: 'groupSize',
      functionName: 'collectRollouts',
      value: 1,
      expected: 'an integer >= 2',
    });
    expect(error.message).toBe(
      "Invalid argument for parameter 'groupSize' of collectRollouts(): expected an integer >= 2, got 1",
    );
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.parameter).toBe('groupSize');
    expect(error.value).toBe(1);
  });

  it('should describe unusual values compactly', () => {
    const message = (value: unknown) =>
      new InvalidArgumentError({ parameter: 'p', value, expected: 'x' }).message;
    expect(message(Number.NaN)).toMatch(/got NaN$/);
    expect(message(undefined)).toMatch(/got undefined$/);
    expect(message([1, 2, 3])).toMatch(/got an array of length 3$/);
    expect(message(new Float32Array(4))).toMatch(/got a Float32Array of length 4$/);
    expect(message('a'.repeat(100))).toMatch(/\.\.\."$/);
  });
});

describe('other error classes', () => {
  it('should each have their own code and marker', () => {
    const nonFinite = new NonFiniteError({
      parameter: 'rewards',
      index: 3,
      value: Number.NaN,
      functionName: 'f',
    });
    expect(nonFinite.code).toBe('NON_FINITE');
    expect(nonFinite.message).toContain("'rewards'");
    expect(nonFinite.message).toContain('rewards[3]');
    const shape = new ShapeMismatchError({
      parameter: 'mask',
      expected: 'length 3',
      actual: 'length 2',
    });
    expect(shape.code).toBe('SHAPE_MISMATCH');
    const spec = new UnsupportedSpecificationError({
      parameter: 'sampler.specificationVersion',
      supported: ['v1'],
      actual: 'v9',
    });
    expect(spec.code).toBe('UNSUPPORTED_SPECIFICATION');
    expect(spec.message).toContain("'v1'");
    const aborted = new AbortedError({ operation: 'sample()', cause: 'user' });
    expect(aborted.code).toBe('ABORTED');
    for (const error of [nonFinite, shape, spec, aborted])
      expect(RlvrError.isInstance(error)).toBe(true);
    expect(NonFiniteError.isInstance(shape)).toBe(false);
    expect(AbortedError.isInstance(aborted)).toBe(true);
    expect(UnsupportedSpecificationError.isInstance(spec)).toBe(true);
  });
});

describe('MemoryLimitError', () => {
  it('should name the estimate by part, the limit and what would fit', async () => {
    const { MemoryLimitError } = await import('./index.js');
    const error = new MemoryLimitError({
      what: 'training this model',
      parts: { weights: 2 * 2 ** 30, gradients: 2 * 2 ** 30, activations: 0 },
      limitBytes: 3 * 2 ** 30,
      limitName: 'memoryLimitBytes',
      fitsWith: ['lora: { r: 16 }', 'gradientCheckpointing: true'],
      functionName: 'createPolicyTrainer',
    });
    expect(error.code).toBe('MEMORY_LIMIT');
    expect(error.estimateBytes).toBe(4 * 2 ** 30);
    expect(error.message).toBe(
      'createPolicyTrainer(): training this model needs about 4.00 GiB (weights 2.00 GiB, gradients 2.00 GiB), over the limit of 3.00 GiB (memoryLimitBytes); it would fit with lora: { r: 16 }, or gradientCheckpointing: true',
    );
    expect(MemoryLimitError.isInstance(error)).toBe(true);
    expect(RlvrError.isInstance(error)).toBe(true);
    expect(InvalidArgumentError.isInstance(error)).toBe(false);
  });
});
