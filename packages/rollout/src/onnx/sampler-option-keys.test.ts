import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ONNX_SAMPLER_OPTION_KEYS, type OnnxSamplerOptions } from '../index.js';
import { resolveSamplerOptions } from './sampler-options.js';

/** The keys the validator lists when it rejects a key with no close match. */
function keysTheValidatorAccepts(): string[] {
  try {
    resolveSamplerOptions({ zzzzzzzzzzzz: 1 } as never);
  } catch (error) {
    if (!InvalidArgumentError.isInstance(error)) throw error;
    const listed = /one of (.*)\)/.exec(error.message)?.[1] ?? '';
    return [...listed.matchAll(/'([^']+)'/g)].map((match) => match[1]!);
  }
  throw new Error('an unknown key was accepted');
}

describe('ONNX_SAMPLER_OPTION_KEYS', () => {
  it('should be exactly the keys createOnnxSampler accepts', () => {
    expect(keysTheValidatorAccepts().sort()).toEqual([...ONNX_SAMPLER_OPTION_KEYS].sort());
  });

  it('should name every key of OnnxSamplerOptions', () => {
    expectTypeOf<(typeof ONNX_SAMPLER_OPTION_KEYS)[number]>().toEqualTypeOf<
      keyof OnnxSamplerOptions
    >();
    expect(new Set(ONNX_SAMPLER_OPTION_KEYS).size).toBe(ONNX_SAMPLER_OPTION_KEYS.length);
  });
});
