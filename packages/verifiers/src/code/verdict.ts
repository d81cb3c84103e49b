import type { Outcome } from './execute.js';
import type { CodeLanguage, SandboxVerdict, SandboxViolation } from './types.js';

const NODE_OOM =
  /JavaScript heap out of memory|Fatal process out of memory|Reached heap limit|allocation failed|std::bad_alloc/i;

type Decision = { verdict: SandboxVerdict; reason: string };

/** How the process ended, in words: `code 3`, `signal SIGKILL` (bubblewrap reports 128 + n). */
function ending(outcome: Outcome): string {
  return outcome.signal ? `signal ${outcome.signal}` : `code ${outcome.exitCode}`;
}

/**
 * Every test passed. A suite that executed no assertion is an `error` (it passes any program). Like a judge, the run still has to end on its own and cleanly: a program kept
 * alive after the tests (a live timer or handle, a non-daemon thread) runs into the wall-clock
 * limit (`timeout`), and one that then crashes or exits non-zero is an `error`.
 */
function afterPass(outcome: Outcome, oomKills: number, total: number): Decision {
  if (outcome.summary?.assertions === 0) {
    return {
      verdict: 'error',
      reason:
        'the tests executed no assertion, so they cannot tell right from wrong (check the tests: ' +
        'Python needs `assert` statements or unittest assertions, JavaScript calls of the `assert` ' +
        'the tests receive or require)',
    };
  }
  if (outcome.killed === 'timeout') {
    return {
      verdict: 'timeout',
      reason:
        `all ${total} tests passed, but the program kept running after the tests (a live timer, ` +
        'handle or non-daemon thread) until the wall-clock limit',
    };
  }
  if (oomKills > 0) return { verdict: 'memory', reason: 'memory limit reached after the tests' };
  const cpuSignal =
    outcome.signal === 'SIGXCPU' ||
    outcome.signal === 'SIGKILL' ||
    outcome.exitCode === 128 + 24 ||
    outcome.exitCode === 128 + 9;
  if (cpuSignal) {
    return { verdict: 'timeout', reason: 'CPU-time limit reached after the tests passed' };
  }
  if (outcome.exitCode !== 0 || outcome.signal !== null) {
    return {
      verdict: 'error',
      reason: `all ${total} tests passed, but the program then exited with ${ending(outcome)}`,
    };
  }
  return { verdict: 'pass', reason: `all ${total} tests passed` };
}

export function decide(outcome: Outcome, oomKills: number, language: CodeLanguage): Decision {
  if (outcome.violations.length > 0) {
    const first = outcome.violations[0] as SandboxViolation;
    return { verdict: 'blocked', reason: `sandbox violation: ${first.kind} (${first.detail})` };
  }
  if (outcome.outputOverflowed || outcome.killed === 'output-limit') {
    // Before `pass`: a flood that ends before, after or while the tests pass is the same flood.
    return { verdict: 'output-limit', reason: 'output exceeded the cap' };
  }
  const { summary, loadFailure } = outcome;
  if (summary && summary.total === summary.passed && outcome.tests.length === summary.total) {
    return afterPass(outcome, oomKills, summary.total);
  }
  if (outcome.killed === 'timeout')
    return { verdict: 'timeout', reason: 'wall-clock limit reached' };
  const memoryTest = outcome.tests.find((test) => test.status === 'memory');
  const crashedOnMemory =
    !summary &&
    !loadFailure &&
    (language === 'javascript' ? NODE_OOM : /\bMemoryError\b/).test(outcome.stderr);
  if (oomKills > 0 || loadFailure?.kind === 'memory' || memoryTest || crashedOnMemory) {
    return { verdict: 'memory', reason: 'memory limit reached' };
  }
  if (outcome.signal === 'SIGXCPU') return { verdict: 'timeout', reason: 'CPU-time limit reached' };
  if (outcome.signal === 'SIGKILL' && outcome.killed === null && !summary && !loadFailure) {
    return { verdict: 'timeout', reason: 'killed at the hard CPU-time limit' };
  }
  if (loadFailure) {
    if (loadFailure.kind === 'exit') return { verdict: 'fail', reason: loadFailure.message };
    const where = loadFailure.phase === 'setup' ? 'test setup failed' : 'program failed to run';
    return { verdict: 'error', reason: `${where}: ${loadFailure.message}` };
  }
  const errored = outcome.tests.find((test) => test.status === 'error');
  if (errored)
    return { verdict: 'error', reason: `test ${errored.index} raised ${errored.message}` };
  if (summary) {
    return { verdict: 'fail', reason: `${summary.passed} of ${summary.total} tests passed` };
  }
  return {
    verdict: 'fail',
    reason: `the program ended before the tests finished (exit ${outcome.exitCode ?? outcome.signal})`,
  };
}
