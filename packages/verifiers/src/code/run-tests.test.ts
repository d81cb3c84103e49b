import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';
import { afterEach, describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
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
