import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
import { HAS_BWRAP } from './sandbox-test-support.js';
import type { RunTestsOptions } from './types.js';

// A weak test suite rewards wrong code: tests that are empty, or that run without executing a
// single assertion, must never give `pass`. Empty tests are a caller error (InvalidArgumentError
// naming `options.tests`); a suite that ran and executed no assertion ends as `error`, score 0.
const limits = { wallTimeMs: 8000 };
const WRONG_PY = 'def add(a, b):\n    return 0\n';
const WRONG_JS = 'function add(a, b) { return 0; }';

function run(options: Omit<RunTestsOptions, 'limits'>) {
  return runTests({ ...options, limits });
}

describe('runTests refuses empty tests', () => {
  it('should throw InvalidArgumentError naming options.tests for empty or blank tests', async () => {
    for (const [language, tests] of [
      ['python', ''],
      ['python', '   \n\t'],
      ['javascript', ''],
      ['python', ['assert add(1, 2) == 3', '  ']],
      ['javascript', ['']],
    ] as const) {
      const error = await runTests({
        language,
        program: language === 'python' ? WRONG_PY : WRONG_JS,
        tests,
      }).catch((caught: unknown) => caught);
      expect(InvalidArgumentError.isInstance(error), JSON.stringify(tests)).toBe(true);
      expect((error as InvalidArgumentError).parameter).toBe('options.tests');
    }
  });
});

describe.skipIf(!HAS_BWRAP)(
  'runTests: a suite that executes no assertion',
  { timeout: 60_000 },
  () => {
    it('should end Python suites without an executed assert as error, score 0', async () => {
      for (const tests of [
        ['x = add(1, 2)'],
        'add(1, 2)\n',
        'result = add(1, 2)\n',
        ['for _ in []:\n    assert add(1, 2) == 3'],
      ]) {
        const result = await run({
          language: 'python',
          program: WRONG_PY,
          tests,
          partialCredit: true,
        });
        expect(result.verdict, JSON.stringify(tests)).toBe('error');
        expect(result.score).toBe(0);
        expect(result.assertions).toBe(0);
        expect(result.reason).toMatch(/no assertion/);
      }
    });

    it('should count assert statements wherever the tests execute them', async () => {
      const program = 'def add(a, b):\n    return a + b\n';
      const viaSetup = await run({
        language: 'python',
        program,
        setup: 'def check(f):\n    for a in range(3):\n        assert f(a, 1) == a + 1\n',
        tests: ['check(add)'],
      });
      expect(viaSetup.verdict).toBe('pass');
      expect(viaSetup.assertions).toBe(3);
      const humanEval = await run({
        language: 'python',
        program,
        tests:
          'def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n\ncheck(add)\n',
      });
      expect(humanEval.verdict).toBe('pass');
      expect(humanEval.assertions).toBe(2);
    });

    it('should count unittest assertions and fail a test whose unittest assertion failed', async () => {
      const suite = (expected: number, runner: string) =>
        [
          'import unittest',
          'class T(unittest.TestCase):',
          '    def test_add(self):',
          `        self.assertEqual(add(1, 2), ${expected})`,
          runner,
        ].join('\n');
      const right = 'def add(a, b):\n    return a + b\n';
      for (const runner of [
        'unittest.TextTestRunner(verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))',
        'unittest.main()',
      ]) {
        const passing = await run({ language: 'python', program: right, tests: suite(3, runner) });
        expect(passing.verdict, runner).toBe('pass');
        expect(passing.assertions).toBe(1);
        const failing = await run({ language: 'python', program: right, tests: suite(4, runner) });
        expect(failing.verdict, runner).toBe('fail');
        expect(failing.score).toBe(0);
      }
      // Behind `if __name__ == '__main__':` nothing runs (the tests are module `__tests__`).
      const guarded = await run({
        language: 'python',
        program: right,
        tests: suite(3, "if __name__ == '__main__':\n    unittest.main()"),
      });
      expect(guarded.verdict).toBe('error');
      expect(guarded.assertions).toBe(0);
    });

    it('should end JavaScript suites without an executed assertion as error, score 0', async () => {
      for (const tests of [
        ['add(1, 2);'],
        'const x = add(1, 2);',
        ['for (const x of []) assert.ok(x);'],
        // Hand-rolled checks are not assertions the harness can count: use assert.
        ["if (add(1, 2) !== 3) throw new Error('wrong');"],
      ]) {
        const result = await run({
          language: 'javascript',
          program: WRONG_JS,
          tests,
          partialCredit: true,
        });
        expect(result.verdict, JSON.stringify(tests)).toBe('error');
        expect(result.score).toBe(0);
        expect(result.assertions).toBe(0);
      }
    });

    it('should count every assert form, including assert required by the tests', async () => {
      const program = 'function add(a, b) { return a + b; }';
      const result = await run({
        language: 'javascript',
        program,
        tests: [
          'assert(add(1, 2) === 3);',
          'assert.strictEqual(add(1, 2), 3); assert.strict.equal(add(0, 0), 0);',
          "const a = require('node:assert/strict'); a.deepEqual([add(1, 1)], [2]);",
          "const { ok } = require('assert'); ok(add(2, 2) === 4);",
        ],
      });
      expect(result.verdict).toBe('pass');
      expect(result.assertions).toBe(5);
    });
  },
);
