import { describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
import { HAS_BWRAP } from './sandbox-test-support.js';

// Judges run a program to its end: one that keeps running after its tests passed (a live timer,
// an interval, a non-daemon thread) is a time-out, not a pass. A program that ends on its own
// after the tests passes; one that then crashes or exits non-zero is an error.
const JS_TESTS = ['assert.strictEqual(add(1, 2), 3);'];
const PY_TESTS = ['assert add(1, 2) == 3'];
const limits = { wallTimeMs: 2500 };

describe.skipIf(!HAS_BWRAP)(
  'runTests: the program must end after its tests',
  { timeout: 60_000 },
  () => {
    it('should time out a Node program whose timer keeps the event loop alive', async () => {
      for (const keepAlive of ['setInterval(() => {}, 1000);']) {
        const result = await runTests({
          language: 'javascript',
          program: `${keepAlive}\nfunction add(a, b) { return a + b; }`,
          tests: JS_TESTS,
          limits,
        });
        expect(result.verdict, keepAlive).toBe('timeout');
        expect(result.score).toBe(0);
        expect(result.passed).toBe(1);
        expect(result.reason).toMatch(/after the tests/);
      }
    });

    it('should pass a Node program whose timers end or are unref-ed', async () => {
      for (const timer of [
        'setTimeout(() => {}, 200);',
        'setInterval(() => {}, 1000).unref();',
        "process.on('exit', () => {});",
      ]) {
        const result = await runTests({
          language: 'javascript',
          program: `${timer}\nfunction add(a, b) { return a + b; }`,
          tests: JS_TESTS,
          limits,
        });
        expect(result.verdict, timer).toBe('pass');
      }
    });

    it('should end a Node program that crashes or exits non-zero after its tests as error', async () => {
      for (const late of [
        "setTimeout(() => { throw new Error('late'); }, 100);",
        'process.exitCode = 3;',
      ]) {
        const result = await runTests({
          language: 'javascript',
          program: `${late}\nfunction add(a, b) { return a + b; }`,
          tests: JS_TESTS,
          limits,
        });
        expect(result.verdict, late).toBe('error');
        expect(result.score).toBe(0);
      }
    });

    it('should time out a Python program whose non-daemon thread keeps running', async () => {
      const result = await runTests({
        language: 'python',
        program:
          'import threading, time\nthreading.Thread(target=lambda: time.sleep(60)).start()\ndef add(a, b):\n    return a + b\n',
        tests: PY_TESTS,
        limits,
      });
      expect(result.verdict).toBe('timeout');
      expect(result.score).toBe(0);
    });

    it('should pass a Python program with daemon or finished threads', async () => {
      const result = await runTests({
        language: 'python',
        program:
          'import threading, time\nthreading.Thread(target=lambda: time.sleep(60), daemon=True).start()\nt = threading.Thread(target=lambda: time.sleep(0.1))\nt.start()\ndef add(a, b):\n    return a + b\n',
        tests: PY_TESTS,
        limits,
      });
      expect(result.verdict, result.reason).toBe('pass');
    });
  },
);
