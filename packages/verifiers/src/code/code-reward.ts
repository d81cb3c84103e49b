import type { RewardFunction, RewardInput } from '@rlvr/core';
import { InvalidArgumentError, validateOneOf, validateOptions } from '@rlvr/core';
import { extractCode } from './extract-code.js';
import type { SandboxPool } from './pool.js';
import { rejectPythonPathForJavaScript, resolveLimits, runTests } from './run-tests.js';
import type { CodeLanguage, RunTestsOptions, RunTestsResult, SandboxLimits } from './types.js';

/** The tests of one code task, as found in `RewardInput.answer`. */
export type CodeTaskAnswer =
  | string
  | readonly string[]
  | { tests: string | readonly string[]; setup?: string };

/** Options of {@link createCodeReward}. */
export type CodeRewardOptions = {
  language: CodeLanguage;
  /** Fraction of tests passed instead of all-or-nothing. Default false. */
  partialCredit?: boolean;
  limits?: SandboxLimits;
  /** Run through this pool (bounded concurrency) instead of directly. */
  pool?: SandboxPool;
  /** Passed to {@link runTests}; see its `isolation` option. */
  isolation?: RunTestsOptions['isolation'];
  /** Passed to {@link runTests}; see its `allowWeakerLimits` option. */
  allowWeakerLimits?: boolean;
  pythonPath?: string;
  bwrapPath?: string;
  prlimitPath?: string;
  /** Reward when the sandbox reports violations (`blocked`). Default 0; e.g. -1 to penalize. */
  blockedReward?: number;
  /** Called with every result (for logging violations, timings, verdict counts). */
  onResult?: (result: RunTestsResult, input: RewardInput) => void;
};

function testsOf(answer: unknown): { tests: string | string[]; setup?: string } | null {
  if (typeof answer === 'string') return answer.trim() ? { tests: answer } : null;
  if (Array.isArray(answer)) {
    return answer.length > 0 && answer.every((item) => typeof item === 'string')
      ? { tests: answer as string[] }
      : null;
  }
  if (answer !== null && typeof answer === 'object' && 'tests' in answer) {
    const { tests, setup } = answer as { tests: unknown; setup?: unknown };
    const inner = testsOf(tests);
    if (!inner) return null;
    return typeof setup === 'string' ? { ...inner, setup } : inner;
  }
  return null;
}

/**
 * A {@link RewardFunction} for code tasks: extracts the last fenced code block of the completion
 * ({@link extractCode}), runs it against the hidden tests in `input.answer` ({@link CodeTaskAnswer})
 * with {@link runTests}, and returns the score (1 pass, else 0, or `passed/total` with
 * `partialCredit`; `blockedReward` when a violation was detected). Returns `null` (not applicable)
 * when the sample has no tests, and 0 when the completion has no code block.
 *
 * @example
 * ```ts
 * const reward = createCodeReward({ language: 'python', partialCredit: true });
 * await reward({ prompt, completion: '```python\ndef f(x):\n    return 2 * x\n```', answer: ['assert f(2) == 4'] }); // 1
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` on a bad option (at creation).
 */
export function createCodeReward(options: CodeRewardOptions): RewardFunction {
  const input = validateOptions<CodeRewardOptions>(options, {
    parameter: 'options',
    functionName: 'createCodeReward',
    known: [
      'language',
      'partialCredit',
      'limits',
      'pool',
      'isolation',
      'allowWeakerLimits',
      'pythonPath',
      'bwrapPath',
      'prlimitPath',
      'blockedReward',
      'onResult',
    ],
  });
  const language = validateOneOf(input.language, ['python', 'javascript'] as const, {
    parameter: 'options.language',
    functionName: 'createCodeReward',
  });
  rejectPythonPathForJavaScript(language, input.pythonPath, 'createCodeReward');
  if (input.limits !== undefined) resolveLimits(input.limits, 'createCodeReward');
  const blockedReward = input.blockedReward ?? 0;
  if (typeof blockedReward !== 'number' || !Number.isFinite(blockedReward)) {
    throw new InvalidArgumentError({
      parameter: 'options.blockedReward',
      functionName: 'createCodeReward',
      value: blockedReward,
      expected: 'a finite number',
    });
  }
  if (input.onResult !== undefined && typeof input.onResult !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.onResult',
      functionName: 'createCodeReward',
      value: input.onResult,
      expected: 'a function',
    });
  }
  return async (sample) => {
    const task = testsOf(sample.answer);
    if (!task) return null;
    const program = extractCode(typeof sample.completion === 'string' ? sample.completion : '', {
      language,
    });
    if (program === null) return 0;
    const runOptions: RunTestsOptions = {
      language,
      program,
      tests: task.tests,
      setup: task.setup,
      limits: input.limits,
      partialCredit: input.partialCredit,
      isolation: input.isolation,
      allowWeakerLimits: input.allowWeakerLimits,
      pythonPath: input.pythonPath,
      bwrapPath: input.bwrapPath,
      prlimitPath: input.prlimitPath,
    };
    const result = await (input.pool ? input.pool.run(runOptions) : runTests(runOptions));
    input.onResult?.(result, sample);
    return result.verdict === 'blocked' ? blockedReward : result.score;
  };
}
