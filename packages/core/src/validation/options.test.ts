import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors/error-codes.js';
import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { closestOption, rejectIneffective, validateOptions } from './options.js';

const grpoKeys = ['beta', 'maxGradNorm', 'schedule', 'groupSize', 'maxSteps', 'epsilonHigh'];

function thrown(run: () => unknown): InvalidArgumentError {
  try {
    run();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('did not throw');
}

describe('closestOption', () => {
  it('should map other systems names, case styles and typos to the known key', () => {
    expect(closestOption('kl_coef', grpoKeys)).toBe('beta');
    expect(closestOption('max_grad_norm', grpoKeys)).toBe('maxGradNorm');
    expect(closestOption('learning_rate', grpoKeys)).toBe('schedule');
    expect(closestOption('learningRate', ['learningRate', 'warmupSteps'])).toBe('learningRate');
    expect(closestOption('tolerence', ['tolerance', 'timeoutMs'])).toBe('tolerance');
    expect(closestOption('worker', ['workers', 'engine'])).toBe('workers');
    expect(closestOption('epsilon_high', grpoKeys)).toBe('epsilonHigh');
    expect(closestOption('num_generations', grpoKeys)).toBe('groupSize');
    expect(closestOption('zzz', grpoKeys)).toBeUndefined();
    expect(closestOption('kl', grpoKeys, { kl: 'beta' })).toBe('beta');
  });
});

describe('validateOptions', () => {
  it('should reject an unknown key, naming it and the closest valid one', () => {
    const error = thrown(() =>
      validateOptions(
        { kl_coef: 0.5 },
        { parameter: 'config', functionName: 'f', known: grpoKeys },
      ),
    );
    expect(error.code).toBe(ErrorCode.UNKNOWN_OPTION);
    expect(error.parameter).toBe('config.kl_coef');
    expect(error.message).toContain("did you mean 'beta'?");
    expect(error.message).toContain('got 0.5');
  });

  it('should reject an unknown key even when its value is undefined', () => {
    expect(() =>
      validateOptions({ maxGradNrom: undefined }, { parameter: 'o', known: grpoKeys }),
    ).toThrow("did you mean 'maxGradNorm'?");
  });

  it('should list the valid keys when nothing is close', () => {
    expect(() => validateOptions({ zzz: 1 }, { parameter: 'o', known: ['a', 'b'] })).toThrow(
      "one of 'a', 'b'",
    );
  });

  it('should accept known keys and leave unchecked objects alone without `known`', () => {
    expect(validateOptions({ beta: 0 }, { parameter: 'o', known: grpoKeys })).toEqual({ beta: 0 });
    expect(validateOptions({ anything: 1 }, { parameter: 'o' })).toEqual({ anything: 1 });
  });
});

describe('rejectIneffective', () => {
  it('should throw INEFFECTIVE_OPTION naming the option and why', () => {
    const error = thrown(() =>
      rejectIneffective({
        parameter: 'config.keepLast',
        value: 3,
        because: 'config.outputDir is not set',
      }),
    );
    expect(error.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(error.message).toContain("'config.keepLast'");
    expect(error.message).toContain('config.outputDir is not set');
  });
});
