import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
import { HAS_BWRAP } from './sandbox-test-support.js';
import type { CodeLanguage } from './types.js';

// A program that writes 100 MB and then passes its tests must end as `output-limit` whatever the
// timing: the cap is enforced on bytes counted, and a late pass never beats it. The cases run with
// every core busy (busy-loop children, bounded in time and killed afterwards): that is where the
// old race let about half of the JavaScript floods pass.
const REPEAT = 2;
const cap = 64 * 1024;
const limits = { wallTimeMs: 10_000, outputBytes: cap };

const JS_ADD = '\nfunction add(a, b) { return a + b; }';
const PY_ADD = '\ndef add(a, b):\n    return a + b\n';
const FLOODS: [CodeLanguage, string, string][] = [
  [
    'javascript',
    'process.stdout.write',
    "const chunk = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) process.stdout.write(chunk);",
  ],
  [
    'javascript',
    'process.stderr.write',
    "const chunk = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) process.stderr.write(chunk);",
  ],
  [
    'javascript',
    'console.log',
    "const line = 'x'.repeat(1 << 16); for (let i = 0; i < 1600; i++) console.log(line);",
  ],
  [
    'javascript',
    'fs.writeSync',
    "const chunk = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) require('fs').writeSync(1, chunk);",
  ],
  [
    'javascript',
    'non-blocking stdout handle',
    "try { process.stdout._handle.setBlocking(false); } catch {}\nconst chunk = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) process.stdout.write(chunk);",
  ],
  [
    'python',
    'sys.stdout.write',
    'import sys\nchunk = "x" * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)',
  ],
  ['python', 'print', 'line = "x" * (1 << 16)\nfor _ in range(1600):\n    print(line)'],
  [
    'python',
    'non-blocking stdout fd',
    'import os, sys\ntry:\n    os.set_blocking(1, False)\nexcept Exception:\n    pass\nchunk = "x" * (1 << 20)\nfor _ in range(100):\n    try:\n        sys.stdout.write(chunk)\n        sys.stdout.flush()\n    except BlockingIOError:\n        pass',
  ],
  [
    'python',
    'non-blocking stdout fd (fcntl)',
    'import fcntl, os, sys\ntry:\n    fcntl.fcntl(1, fcntl.F_SETFL, os.O_NONBLOCK)\nexcept Exception:\n    pass\nchunk = "x" * (1 << 20)\nfor _ in range(100):\n    try:\n        os.write(1, chunk.encode())\n    except BlockingIOError:\n        pass',
  ],
];

let busy: ChildProcess[] = [];

beforeAll(() => {
  // One busy loop per core, each ending on its own after 120 s at the latest.
  const script = 'const end = Date.now() + 120_000; while (Date.now() < end) {}';
  busy = cpus().map(() => spawn(process.execPath, ['-e', script], { stdio: 'ignore' }));
});

afterAll(() => {
  for (const child of busy) child.kill('SIGKILL');
});

describe.skipIf(!HAS_BWRAP)(
  'runTests: 100 MB output floods on a loaded machine',
  { timeout: 120_000 },
  () => {
    it('should end every flood as output-limit (never pass), every time', async () => {
      const verdicts: string[] = [];
      for (let round = 0; round < REPEAT; round++) {
        for (const [language, how, flood] of FLOODS) {
          const result = await runTests({
            language,
            program: flood + (language === 'python' ? PY_ADD : JS_ADD),
            tests:
              language === 'python'
                ? ['assert add(1, 2) == 3']
                : ['assert.strictEqual(add(1, 2), 3);'],
            limits,
          });
          verdicts.push(`${language} ${how}: ${result.verdict}`);
          expect(result.stdout.length + result.stderr.length).toBeLessThanOrEqual(2 * cap);
        }
      }
      // Making Python's stdout non-blocking (bytes the pipe cannot take at once are dropped) is
      // reported as tampering: `blocked`, every time.
      const expected = (line: string) =>
        line.startsWith('python non-blocking') ? ': blocked' : ': output-limit';
      expect(verdicts.filter((line) => !line.endsWith(expected(line)))).toEqual([]);
      expect(busy.every((child) => child.exitCode === null)).toBe(true); // the load was on
    });
  },
);
