import {
  InvalidArgumentError,
  rejectIneffective,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import {
  type CodeLanguage,
  DEFAULT_SANDBOX_LIMITS,
  type RunTestsOptions,
  type SandboxLimits,
} from './types.js';

const MAX_SOURCE_CHARS = 4 * 1024 * 1024;
const MAX_TESTS = 10_000;

export type ResolvedLimits = Required<SandboxLimits>;

/** {@link RunTestsOptions} checked, with defaults filled in. */
export type ValidatedRunTestsOptions = {
  language: CodeLanguage;
  program: string;
  tests: string | readonly string[];
  setup: string | undefined;
  limits: ResolvedLimits;
  partialCredit: boolean;
  isolation: 'bubblewrap' | 'unsafe-no-isolation';
  allowWeakerLimits: boolean;
  pythonPath: string | undefined;
  bwrapPath: string | undefined;
  prlimitPath: string | undefined;
  signal: AbortSignal | undefined;
};

/** The keys of {@link RunTestsOptions}. */
export const RUN_TESTS_KEYS = [
  'language',
  'program',
  'tests',
  'setup',
  'limits',
  'partialCredit',
  'isolation',
  'allowWeakerLimits',
  'pythonPath',
  'bwrapPath',
  'prlimitPath',
  'signal',
] as const;

/** `pythonPath` does nothing for JavaScript (it runs on the current Node): INEFFECTIVE_OPTION. @internal */
export function rejectPythonPathForJavaScript(
  language: CodeLanguage,
  pythonPath: unknown,
  functionName: string,
): void {
  if (language === 'javascript' && pythonPath !== undefined) {
    rejectIneffective({
      parameter: 'options.pythonPath',
      value: pythonPath,
      because: "options.language is 'javascript' (it runs on the current Node)",
      functionName,
    });
  }
}

/** Validates sandbox limits (known keys and ranges) and fills in the defaults. @internal */
export function resolveLimits(value: unknown, functionName: string): ResolvedLimits {
  const limits = validateOptions<SandboxLimits>(value, {
    parameter: 'limits',
    functionName,
    known: Object.keys(DEFAULT_SANDBOX_LIMITS),
  });
  const integer = (key: keyof SandboxLimits, min: number, max: number): number =>
    limits[key] === undefined
      ? DEFAULT_SANDBOX_LIMITS[key]
      : validateInteger(limits[key], { parameter: `limits.${key}`, functionName, min, max });
  const wallTimeMs = integer('wallTimeMs', 100, 3_600_000);
  return {
    wallTimeMs,
    cpuTimeMs: limits.cpuTimeMs === undefined ? wallTimeMs : integer('cpuTimeMs', 100, 3_600_000),
    memoryBytes: integer('memoryBytes', 64 * 1024 * 1024, 2 ** 45),
    outputBytes: integer('outputBytes', 1024, 1024 * 1024 * 1024),
    fileSizeBytes: integer('fileSizeBytes', 0, 2 ** 40),
    diskBytes: integer('diskBytes', 1024 * 1024, 2 ** 40),
    openFiles: integer('openFiles', 16, 65_536),
    processes: integer('processes', 16, 65_536),
  };
}

/**
 * Tests must hold code: `''`, a blank string or a blank entry can only pass vacuously, so they are
 * refused here (a suite that runs but executes no assertion ends as `error`, see the harnesses).
 */
function validateTests(tests: unknown, functionName: string): string | readonly string[] {
  const source = (test: unknown) =>
    typeof test === 'string' && test.trim() !== '' && test.length <= MAX_SOURCE_CHARS;
  const ok =
    source(tests) ||
    (Array.isArray(tests) &&
      tests.length > 0 &&
      tests.length <= MAX_TESTS &&
      tests.every((test) => source(test)));
  if (!ok) {
    throw new InvalidArgumentError({
      parameter: 'options.tests',
      functionName,
      value: tests,
      expected:
        `a non-blank string or a non-empty array (at most ${MAX_TESTS}) of non-blank strings ` +
        '(tests without code would pass any program)',
    });
  }
  return tests as string | readonly string[];
}

function optionalString(value: unknown, parameter: string, functionName: string, blank = true) {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || (!blank && value === '')) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: blank ? 'a string' : 'a non-empty path string',
    });
  }
  return value;
}

function optionalBoolean(value: unknown, parameter: string, functionName: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError({ parameter, functionName, value, expected: 'a boolean' });
  }
  return value;
}

/** Validates the options of `runTests` (every key, type and range) before anything runs. */
export function validateRunTestsOptions(
  options: unknown,
  functionName: string,
): ValidatedRunTestsOptions {
  if (options === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName,
      value: options,
      expected: 'an options object',
    });
  }
  const input = validateOptions<RunTestsOptions>(options, {
    parameter: 'options',
    functionName,
    known: [...RUN_TESTS_KEYS],
  });
  const language = validateOneOf(input.language, ['python', 'javascript'] as const, {
    parameter: 'options.language',
    functionName,
  });
  rejectPythonPathForJavaScript(language, input.pythonPath, functionName);
  if (typeof input.program !== 'string' || input.program.length > MAX_SOURCE_CHARS) {
    throw new InvalidArgumentError({
      parameter: 'options.program',
      functionName,
      value: input.program,
      expected: `a string of at most ${MAX_SOURCE_CHARS} characters`,
    });
  }
  const tests = validateTests(input.tests, functionName);
  const isolation = validateOneOf(
    input.isolation ?? 'bubblewrap',
    ['bubblewrap', 'unsafe-no-isolation'] as const,
    { parameter: 'options.isolation', functionName },
  );
  if (isolation === 'unsafe-no-isolation' && input.bwrapPath !== undefined) {
    rejectIneffective({
      parameter: 'options.bwrapPath',
      value: input.bwrapPath,
      because: "options.isolation is 'unsafe-no-isolation' (bubblewrap is not used)",
      functionName,
    });
  }
  if (input.signal !== undefined && !(input.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError({
      parameter: 'options.signal',
      functionName,
      value: input.signal,
      expected: 'an AbortSignal',
    });
  }
  return {
    language,
    program: input.program,
    tests,
    setup: optionalString(input.setup, 'options.setup', functionName),
    limits: resolveLimits(input.limits, functionName),
    partialCredit: optionalBoolean(input.partialCredit, 'options.partialCredit', functionName),
    isolation,
    allowWeakerLimits: optionalBoolean(
      input.allowWeakerLimits,
      'options.allowWeakerLimits',
      functionName,
    ),
    pythonPath: optionalString(input.pythonPath, 'options.pythonPath', functionName, false),
    bwrapPath: optionalString(input.bwrapPath, 'options.bwrapPath', functionName, false),
    prlimitPath: optionalString(input.prlimitPath, 'options.prlimitPath', functionName, false),
    signal: input.signal,
  };
}
