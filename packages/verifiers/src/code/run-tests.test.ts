import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';
import { afterEach, describe, expect, it } from 'vitest';
import { PYTHON_HARNESS } from './harness-python.js';
import { runTests } from './run-tests.js';
import { defaultPythonPath } from './runtime.js';
import { HAS_BWRAP } from './sandbox-test-support.js';

const limits = { wallTimeMs: 8000 };

describe('runTests argument validation', () => {
  it('should name the bad parameter', async () => {
    await expect(
      runTests({ language: 'ruby' as 'python', program: '', tests: ['x'] }),
    ).rejects.toThrow(/options\.language/);
    await expect(
      runTests({ language: 'python', program: 1 as unknown as string, tests: ['x'] }),
    ).rejects.toThrow(/options\.program/);
    await expect(runTests({ language: 'python', program: '', tests: [] })).rejects.toThrow(
      /options\.tests/,
    );
    const error = await runTests({
      language: 'python',
      program: '',
      tests: ['x'],
      limits: { wallTimeMs: -1 },
    }).catch((caught: unknown) => caught);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as InvalidArgumentError).parameter).toBe('limits.wallTimeMs');
  });
});

describe('runTests when bubblewrap is unavailable', { timeout: 60_000 }, () => {
  const saved = process.env.RLVR_BWRAP;
  afterEach(() => {
    if (saved === undefined) delete process.env.RLVR_BWRAP;
    else process.env.RLVR_BWRAP = saved;
  });

  it('should refuse with a typed UNAVAILABLE error', async () => {
    process.env.RLVR_BWRAP = '/nonexistent/bwrap';
    const error = await runTests({
      language: 'python',
      program: 'x = 1',
      tests: ['assert x == 1'],
    }).catch((caught: unknown) => caught);
    expect(RlvrError.isInstance(error)).toBe(true);
    expect((error as RlvrError).code).toBe(ErrorCode.UNAVAILABLE);
    expect((error as Error).message).toMatch(/bubblewrap/);
    expect((error as Error).message).toMatch(/unsafe-no-isolation/);
  });

  it('should run in the explicit unsafe mode, still with the in-process guards', async () => {
    process.env.RLVR_BWRAP = '/nonexistent/bwrap';
    const ok = await runTests({
      language: 'python',
      program: 'def add(a, b):\n    return a + b\n',
      tests: ['assert add(1, 2) == 3'],
      isolation: 'unsafe-no-isolation',
      limits,
    });
    expect(ok.verdict).toBe('pass');
    expect(ok.isolation.mode).toBe('none');
    const outside = await runTests({
      language: 'javascript',
      program: "try { require('fs').readFileSync('/etc/hostname'); } catch {}",
      tests: ['assert.ok(true);'],
      isolation: 'unsafe-no-isolation',
      limits,
    });
    expect(outside.verdict).toBe('blocked');
  });
});

describe.skipIf(!HAS_BWRAP)('runTests: python', { timeout: 60_000 }, () => {
  it('should pass, fail and count tests', async () => {
    const program = 'def add(a, b):\n    return a + b\n';
    const pass = await runTests({
      language: 'python',
      program,
      tests: ['assert add(1, 2) == 3', 'assert add(0, 0) == 0'],
      limits,
    });
    expect(pass).toMatchObject({ verdict: 'pass', passed: 2, total: 2, score: 1, violations: [] });
    expect(pass.isolation.mode).toBe('bubblewrap');
    expect(pass.timings.totalMs).toBeGreaterThan(0);
    const fail = await runTests({
      language: 'python',
      program,
      tests: ['assert add(1, 2) == 3', 'assert add(2, 2) == 5', 'assert add(1, 1) == 2'],
      limits,
      partialCredit: true,
    });
    expect(fail).toMatchObject({ verdict: 'fail', passed: 2, total: 3 });
    expect(fail.score).toBeCloseTo(2 / 3, 12);
    expect(fail.tests.map((test) => test.status)).toEqual(['pass', 'fail', 'pass']);
  });

  it('should split a test string into setup and one test per assert/expression', async () => {
    const tests =
      'def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n\nexpected = 16\ncheck(square)\nassert square(4) == expected\n';
    const result = await runTests({
      language: 'python',
      program: 'def square(x):\n    return x * x\n',
      tests,
      limits,
    });
    expect(result).toMatchObject({ verdict: 'pass', passed: 2, total: 2 });
    const wrong = await runTests({
      language: 'python',
      program: 'def square(x):\n    return x + x\n',
      tests,
      limits,
    });
    expect(wrong).toMatchObject({ verdict: 'fail', passed: 0, total: 2 });
  });

  it('should report syntax errors and runtime exceptions as error', async () => {
    const syntax = await runTests({
      language: 'python',
      program: 'def add(a, b)\n    return a',
      tests: ['assert add(1, 2) == 3'],
      limits,
    });
    expect(syntax.verdict).toBe('error');
    expect(syntax.reason).toMatch(/SyntaxError/);
    const raises = await runTests({
      language: 'python',
      program: 'def add(a, b):\n    return a + None\n',
      tests: ['assert add(1, 2) == 3'],
      limits,
    });
    expect(raises.verdict).toBe('error');
    expect(raises.tests[0]?.message).toMatch(/TypeError/);
  });

  it('should let the program use its work dir, threads and the stdlib', async () => {
    const program = [
      'import collections, json, threading, tempfile, re',
      'P = collections.namedtuple("P", "x y")',
      'with open("notes.txt", "w") as handle:',
      '    handle.write("hello")',
      'def read():',
      '    with open("notes.txt") as handle:',
      '        return handle.read()',
      'box = []',
      't = threading.Thread(target=lambda: box.append(1))',
      't.start(); t.join()',
    ].join('\n');
    const result = await runTests({
      language: 'python',
      program,
      tests: ['assert read() == "hello"', 'assert box == [1]', 'assert P(1, 2).y == 2'],
      limits,
    });
    expect(result.violations).toEqual([]);
    expect(result.verdict).toBe('pass');
  });

  it('should enforce the process limit at the OS layer (threads count too)', async () => {
    const program = [
      'import threading, time',
      'started = 0',
      'try:',
      '    for _ in range(200):',
      '        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()',
      '        started += 1',
      'except RuntimeError:',
      '    pass',
    ].join('\n');
    const result = await runTests({
      language: 'python',
      program,
      tests: ['assert started < 200, started'],
      limits: { ...limits, processes: 32 },
    });
    expect(result.verdict).toBe('pass');
  });
});

describe.skipIf(!HAS_BWRAP)('runTests: javascript', { timeout: 60_000 }, () => {
  it('should pass, fail and give partial credit', async () => {
    const program =
      'function add(a, b) { return a + b; }\nconst twice = (x) => 2 * x;\nclass Box { constructor(v) { this.v = v; } }';
    const pass = await runTests({
      language: 'javascript',
      program,
      tests: [
        'assert.strictEqual(add(1, 2), 3);',
        'assert.strictEqual(twice(4), 8);',
        'assert.deepStrictEqual(new Box(1), new Box(1));',
      ],
      limits,
    });
    expect(pass).toMatchObject({ verdict: 'pass', passed: 3, total: 3, score: 1 });
    const fail = await runTests({
      language: 'javascript',
      program,
      tests: ['assert.strictEqual(add(1, 2), 3);', 'assert.strictEqual(twice(4), 9);'],
      limits,
      partialCredit: true,
    });
    expect(fail).toMatchObject({ verdict: 'fail', passed: 1, total: 2, score: 0.5 });
  });

  it('should support async tests and setup', async () => {
    const result = await runTests({
      language: 'javascript',
      program: 'async function later(x) { await new Promise((r) => setTimeout(r, 10)); return x; }',
      setup: 'globalThis.expected = 7;',
      tests: ['assert.strictEqual(await later(7), expected);'],
      limits,
    });
    expect(result.verdict).toBe('pass');
  });

  it('should report syntax errors and thrown exceptions as error', async () => {
    const syntax = await runTests({
      language: 'javascript',
      program: 'function add(a, b) { return a +; }',
      tests: ['assert.ok(true);'],
      limits,
    });
    expect(syntax.verdict).toBe('error');
    expect(syntax.reason).toMatch(/SyntaxError/);
    const throws = await runTests({
      language: 'javascript',
      program: 'function add() { return null.x; }',
      tests: ['add();'],
      limits,
    });
    expect(throws.verdict).toBe('error');
    expect(throws.tests[0]?.message).toMatch(/TypeError/);
  });

  it('should allow the work dir and safe builtins', async () => {
    const result = await runTests({
      language: 'javascript',
      program:
        "const fs = require('fs'); fs.writeFileSync('out.txt', 'hi'); const util = require('node:util');\nfunction read() { return fs.readFileSync('out.txt', 'utf8'); }",
      tests: [
        "assert.strictEqual(read(), 'hi');",
        "assert.strictEqual(util.format('%d', 3), '3');",
      ],
      limits,
    });
    expect(result.violations).toEqual([]);
    expect(result.verdict).toBe('pass');
  });
});

/** The harness payload: a line of byte lengths, then the UTF-8 fields back to back. */
function framed(fields: string[]): Buffer {
  const parts = fields.map((field) => Buffer.from(field, 'utf8'));
  return Buffer.concat([Buffer.from(`${parts.map((part) => part.length).join(' ')}\n`), ...parts]);
}

const PYTHON = defaultPythonPath();

describe.skipIf(!PYTHON)('python harness protocol', () => {
  it('should run from source with a length-prefixed payload and without importing json', () => {
    const work = mkdtempSync(join(tmpdir(), 'rlvr-protocol-'));
    try {
      const nonce = 'n0nce';
      const program = [
        'import sys',
        // Not a literal "json": the harness imports (and watches) modules the code names.
        'JSON_LOADED = "".join(["js", "on"]) in sys.modules',
        'def flip(text):',
        '    return text[::-1]',
      ].join('\n');
      const payload = framed([
        nonce,
        work,
        `${work}/solution.py`,
        program,
        '',
        'a',
        work,
        '0',
        'assert flip("ab") == "ba"',
        'assert flip("é – 😀") == "😀 – é"',
        'assert not JSON_LOADED',
        'assert flip("x") == "y"',
      ]);
      const result = spawnSync(
        PYTHON as string,
        ['-I', '-S', '-B', '-X', 'utf8', '-c', PYTHON_HARNESS],
        { input: payload, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: {}, timeout: 20_000 },
      );
      const lines = String(result.output[3]).trim().split('\n');
      expect(lines.slice(0, 4)).toEqual([
        `${nonce} N 4`,
        `${nonce} T 0 pass `,
        `${nonce} T 1 pass `,
        `${nonce} T 2 pass `,
      ]);
      expect(lines[4]).toMatch(new RegExp(`^${nonce} T 3 fail AssertionError`));
      expect(lines[5]).toBe(`${nonce} S 3 4 4`); // passed, total, assertions executed
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!HAS_BWRAP)('runTests start-up', { timeout: 60_000 }, () => {
  const harnessFolders = () =>
    readdirSync(tmpdir()).filter((name) => name.startsWith('rlvr-harness-'));

  it('should carry non-ASCII programs and tests intact, and leave no harness files behind', async () => {
    const before = new Set(harnessFolders());
    const python = await runTests({
      language: 'python',
      program: 's = "héllo – 😀"\n',
      tests: ['assert s == "héllo – 😀"', 'assert len(s) == 9'],
      limits,
    });
    expect(python.verdict).toBe('pass');
    const javascript = await runTests({
      language: 'javascript',
      program: "const s = 'héllo – 😀';",
      tests: ["assert.strictEqual(s, 'héllo – 😀');", 'assert.strictEqual([...s].length, 9);'],
      limits,
    });
    expect(javascript.verdict).toBe('pass');
    expect(harnessFolders().filter((name) => !before.has(name))).toEqual([]);
  });

  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

  it.skipIf(!isRoot)('should run the program inside its run cgroup (as root)', async (context) => {
    const prefix = `rlvr-sandbox-${process.pid}-`;
    const groups = (directory: string, depth: number): string[] => {
      const found: string[] = [];
      let entries: string[] = [];
      try {
        entries = readdirSync(directory);
      } catch {
        return found;
      }
      for (const entry of entries) {
        const path = join(directory, entry);
        if (entry.startsWith(prefix)) found.push(path);
        else if (depth > 0 && !entry.includes('.')) found.push(...groups(path, depth - 1));
      }
      return found;
    };
    let done = false;
    const running = runTests({
      language: 'python',
      program: 'import time\ntime.sleep(1)\n',
      tests: ['assert 1'],
      limits,
    }).finally(() => {
      done = true;
    });
    let members = 0;
    while (!done && members === 0) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      for (const group of groups('/sys/fs/cgroup', 4)) {
        try {
          members += readFileSync(join(group, 'cgroup.procs'), 'utf8')
            .trim()
            .split('\n')
            .filter(Boolean).length;
        } catch {}
      }
    }
    const result = await running;
    expect(result.verdict).toBe('pass');
    if (!result.isolation.cgroup) context.skip('cgroups are not usable on this host');
    expect(members).toBeGreaterThan(0);
  });
});
