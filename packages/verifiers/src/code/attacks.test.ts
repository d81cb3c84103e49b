import { describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
import { HAS_BWRAP } from './sandbox-test-support.js';
import type { RunTestsOptions, RunTestsResult } from './types.js';

// The attack suite: every program tries to escape, fake a pass or read the hidden tests. None may
// pass; exploits that the guards can see must end as `blocked` even when the program swallows the
// error. Limits are small so the suite stays fast on a loaded 2-core machine.
const limits = { wallTimeMs: 8000, cpuTimeMs: 4000, memoryBytes: 256 * 1024 * 1024 };

function attack(options: Omit<RunTestsOptions, 'limits'> & { limits?: RunTestsOptions['limits'] }) {
  return runTests({ ...options, limits: { ...limits, ...options.limits } });
}

function expectNotPass(result: RunTestsResult) {
  expect(result.verdict).not.toBe('pass');
  expect(result.score).toBe(0);
}

const PY_ADD_TESTS = ['assert add(1, 2) == 3', 'assert add(2, 2) == 4'];
const JS_ADD_TESTS = ['assert.strictEqual(add(1, 2), 3);', 'assert.strictEqual(add(2, 2), 4);'];

describe.skipIf(!HAS_BWRAP)('sandbox attack suite: python', { timeout: 60_000 }, () => {
  it('should block a fork bomb (and contain it even when swallowed)', async () => {
    const result = await attack({
      language: 'python',
      program:
        'import os\nfor _ in range(10000):\n    try:\n        os.fork()\n    except Exception:\n        pass\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
    expect(result.violations.some((violation) => violation.kind === 'process')).toBe(true);
  });

  it('should block subprocess and os.system', async () => {
    const result = await attack({
      language: 'python',
      program:
        'import subprocess, os\ntry:\n    subprocess.run(["cat", "/etc/passwd"])\nexcept Exception:\n    pass\ntry:\n    os.system("true")\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
    expect(result.violations.map((violation) => violation.kind)).toContain('process');
  });

  it('should end a memory bomb as memory', async () => {
    const result = await attack({
      language: 'python',
      program: 'blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 1024 * 1024))\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('memory');
  });

  it('should cap a 100 MB output flood without buffering it', async () => {
    const result = await attack({
      language: 'python',
      program:
        'import sys\nchunk = "x" * (1024 * 1024)\nfor _ in range(100):\n    sys.stdout.write(chunk)\nsys.stdout.flush()\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
      limits: { outputBytes: 64 * 1024 },
    });
    expect(result.verdict).toBe('output-limit');
    expect(result.stdout.length).toBeLessThanOrEqual(64 * 1024);
  });

  it('should block reading files outside the work dir even when the error is swallowed', async () => {
    for (const target of ['/etc/passwd', '/proc/self/environ', '/rlvr/harness.py']) {
      const result = await attack({
        language: 'python',
        program: `try:\n    print(open(${JSON.stringify(target)}).read())\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n`,
        tests: PY_ADD_TESTS,
      });
      expect(result.verdict, target).toBe('blocked');
      expect(result.violations[0]?.kind).toBe('file-read');
    }
  });

  it('should block directory scans outside the work dir', async () => {
    const result = await attack({
      language: 'python',
      program:
        'import os\ntry:\n    print(os.listdir("/"))\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
  });

  it('should block writing outside the work dir', async () => {
    const result = await attack({
      language: 'python',
      program:
        'try:\n    open("/tmp/escape.txt", "w").write("x")\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
    expect(result.violations[0]?.kind).toBe('file-write');
  });

  it('should block network sockets and name resolution', async () => {
    for (const attempt of [
      'import socket\nsocket.create_connection(("1.1.1.1", 80), timeout=1)',
      'import socket\nsocket.getaddrinfo("example.com", 80)',
      'import urllib.request\nurllib.request.urlopen("http://example.com", timeout=1)',
    ]) {
      const indented = attempt
        .split('\n')
        .map((line) => `    ${line}`)
        .join('\n');
      const result = await attack({
        language: 'python',
        program: `try:\n${indented}\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n`,
        tests: PY_ADD_TESTS,
      });
      expect(result.verdict, attempt).toBe('blocked');
      expect(result.violations[0]?.kind).toBe('network');
    }
  });

  it('should fail exit(0) and fake "all tests passed" output', async () => {
    for (const program of [
      'import sys\nsys.exit(0)',
      'import os\nprint("All tests passed!")\nos._exit(0)',
      'import os\ndef add(a, b):\n    print("OK 2/2 passed")\n    os._exit(0)\n',
      'def add(a, b):\n    raise SystemExit(0)\n',
    ]) {
      const result = await attack({ language: 'python', program, tests: PY_ADD_TESTS });
      expect(result.verdict, program).toBe('fail');
      expectNotPass(result);
    }
  });

  it('should not let the program replace AssertionError or builtins used by the tests', async () => {
    const result = await attack({
      language: 'python',
      program:
        'import builtins\nbuiltins.AssertionError = Exception\nbuiltins.len = lambda x: 3\ndef add(a, b):\n    return 0\n',
      tests: ['assert len([1]) == 1', 'assert add(1, 2) == 3'],
    });
    expectNotPass(result);
    expect(result.verdict).toBe('blocked');
    expect(result.violations[0]?.kind).toBe('tamper');
  });

  it('should report tampering with stdlib modules the tests use, however they are reached', async () => {
    for (const [program, tests] of [
      ['import json\njson.loads = lambda text: [1, 2]\n', ['assert json.loads("[]") == [1, 2]']],
      // The program never names json; the tests do, so it is imported and watched before the run.
      [
        '__import__("".join(["js", "on"])).loads = lambda text: [1, 2]\n',
        ['import json\nassert json.loads("[]") == [1, 2]'],
      ],
      [
        'import heapq\nheapq.heappop = lambda heap: 0\n',
        ['import heapq\nassert heapq.heappop([5]) == 0'],
      ],
      [
        'import collections\ncollections.Counter = dict\n',
        ['from collections import Counter\nassert Counter("aa") == {}'],
      ],
    ] as const) {
      const result = await attack({ language: 'python', program, tests: [...tests] });
      expect(result.verdict, program).toBe('blocked');
      expect(result.violations[0]?.kind, program).toBe('tamper');
    }
  });

  it('should block forged harness messages on the result channel', async () => {
    const result = await attack({
      language: 'python',
      program: 'import os\nos.write(3, b"0000 S 2 2\\n")\nos._exit(0)\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
    expect(result.violations[0]?.detail).toContain('forged');
  });

  it('should keep the hidden tests out of reach (frames, inspect, gc, stdin, own file)', async () => {
    const secret = 'SECRET_EXPECTED_VALUE_4242';
    const program = [
      'import sys, os, gc, inspect',
      'leaks = []',
      'def add(a, b):',
      '    for probe in (lambda: sys._getframe(1).f_code.co_consts, lambda: inspect.stack()[1].frame.f_locals, lambda: sys.exc_info(), lambda: os.read(0, 100), lambda: open(__file__).read()):',
      '        try:',
      '            leaks.append(repr(probe()))',
      '        except BaseException:',
      '            pass',
      '    print("LEAKS", leaks)',
      '    return a + b',
    ].join('\n');
    const result = await attack({
      language: 'python',
      program,
      tests: [`assert add(1, 2) == 3, "${secret}"`],
    });
    expect(result.stdout).toContain('LEAKS');
    expect(result.stdout).not.toContain(secret);
    expect(result.verdict).toBe('pass');
    const scan = await attack({
      language: 'python',
      program:
        'import gc\ntry:\n    print([o for o in gc.get_objects() if isinstance(o, str) and "SECRET" in o])\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n',
      tests: [`assert add(1, 2) == 3, "${secret}"`],
    });
    expect(scan.verdict).toBe('blocked');
    expect(scan.stdout).not.toContain(secret);
  });

  it('should block ctypes (native code bypasses every guard)', async () => {
    const result = await attack({
      language: 'python',
      program:
        'try:\n    import ctypes\nexcept Exception:\n    pass\ndef add(a, b):\n    return a + b\n',
      tests: PY_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
  });

  it('should time out an infinite loop', async () => {
    const result = await attack({
      language: 'python',
      program: 'while True:\n    pass\n',
      tests: PY_ADD_TESTS,
      limits: { wallTimeMs: 1500 },
    });
    expect(result.verdict).toBe('timeout');
  });
});

describe.skipIf(!HAS_BWRAP)('sandbox attack suite: javascript', { timeout: 60_000 }, () => {
  it('should block child processes and workers even when swallowed', async () => {
    for (const attempt of [
      "require('child_process').execSync('cat /etc/passwd')",
      "new (require('worker_threads').Worker)('1', { eval: true })",
      "process.binding('spawn_sync')",
    ]) {
      const result = await attack({
        language: 'javascript',
        program: `try { ${attempt}; } catch {}\nfunction add(a, b) { return a + b; }`,
        tests: JS_ADD_TESTS,
      });
      expect(result.verdict, attempt).toBe('blocked');
    }
  });

  it('should end a memory bomb as memory', async () => {
    const result = await attack({
      language: 'javascript',
      program: 'const keep = []; while (true) keep.push(new Array(1e6).fill(Math.random()));',
      tests: JS_ADD_TESTS,
    });
    expect(result.verdict).toBe('memory');
  });

  it('should cap a 100 MB output flood', async () => {
    const result = await attack({
      language: 'javascript',
      program:
        "const fs = require('fs'); const chunk = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) fs.writeSync(1, chunk);\nfunction add(a, b) { return a + b; }",
      tests: JS_ADD_TESTS,
      limits: { outputBytes: 64 * 1024 },
    });
    expect(result.verdict).toBe('output-limit');
    expect(result.stdout.length).toBeLessThanOrEqual(64 * 1024);
  });

  it('should block file reads and writes outside the work dir', async () => {
    for (const attempt of [
      "require('fs').readFileSync('/etc/passwd', 'utf8')",
      "require('fs').readFileSync('/rlvr/harness.cjs', 'utf8')",
      "require('fs').writeFileSync('/tmp/escape.txt', 'x')",
      "require('fs').readdirSync('/')",
      "require('fs').promises.readFile('/etc/passwd').catch(() => {})",
      "require('fs/promises').writeFile('/tmp/escape.txt', 'x').catch(() => {})",
    ]) {
      const result = await attack({
        language: 'javascript',
        program: `try { console.log(${attempt}); } catch {}\nfunction add(a, b) { return a + b; }`,
        tests: JS_ADD_TESTS,
      });
      expect(result.verdict, attempt).toBe('blocked');
    }
  });

  it('should block network access', async () => {
    for (const attempt of [
      "require('net').connect(80, '1.1.1.1').on('error', () => {})",
      "require('dns').lookup('example.com', () => {})",
      "fetch('http://example.com').catch(() => {})",
    ]) {
      const result = await attack({
        language: 'javascript',
        program: `try { ${attempt}; } catch {}\nfunction add(a, b) { return a + b; }`,
        tests: JS_ADD_TESTS,
      });
      expect(result.verdict, attempt).toBe('blocked');
      expect(result.violations[0]?.kind).toBe('network');
    }
  });

  it('should fail process.exit(0) and fake success output', async () => {
    for (const program of [
      'process.exit(0);',
      "console.log('All tests passed!'); process.exit(0);",
      'function add(a, b) { process.exit(0); }',
    ]) {
      const result = await attack({ language: 'javascript', program, tests: JS_ADD_TESTS });
      expect(result.verdict, program).toBe('fail');
    }
  });

  it('should not let monkeypatched assert or hijacked require reach the tests', async () => {
    const result = await attack({
      language: 'javascript',
      program:
        "const assert = require('assert'); assert.strictEqual = () => {}; globalThis.require = () => ({ strictEqual() {} });\nfunction add() { return 0; }",
      tests: JS_ADD_TESTS,
    });
    expectNotPass(result);
    expect(result.verdict).toBe('blocked');
    expect(result.violations[0]?.kind).toBe('tamper');
  });

  it('should not let patched Promise machinery fake a pass', async () => {
    const result = await attack({
      language: 'javascript',
      program:
        'const then = Promise.prototype.then; Promise.prototype.then = function (ok) { return then.call(Promise.resolve(), ok); };\nfunction add() { return 0; }',
      tests: JS_ADD_TESTS,
    });
    expectNotPass(result);
  });

  it('should block forged harness messages', async () => {
    const result = await attack({
      language: 'javascript',
      program: "require('fs').writeSync(3, '00 S 2 2\\n'); process.exit(0);",
      tests: JS_ADD_TESTS,
    });
    expect(result.verdict).toBe('blocked');
  });

  it('should keep the hidden tests out of reach (callers, stacks, loader)', async () => {
    const secret = 'SECRET_EXPECTED_4242';
    const program = [
      'const leaks = [];',
      'function add(a, b) {',
      '  const probes = [',
      '    () => String(add.caller),',
      '    () => new Error().stack,',
      '    () => String(process.mainModule && process.mainModule.require),',
      "    () => require('fs').readFileSync(0, 'utf8'),",
      '  ];',
      '  for (const probe of probes) { try { leaks.push(probe()); } catch {} }',
      "  console.log('LEAKS', JSON.stringify(leaks));",
      '  return a + b;',
      '}',
    ].join('\n');
    const result = await attack({
      language: 'javascript',
      program,
      tests: [`assert.strictEqual(add(1, 2), 3, '${secret}');`],
    });
    expect(result.stdout).toContain('LEAKS');
    expect(result.stdout).not.toContain(secret);
    expect(result.verdict).toBe('pass');
  });

  it('should time out an infinite loop', async () => {
    const result = await attack({
      language: 'javascript',
      program: 'while (true) {}',
      tests: JS_ADD_TESTS,
      limits: { wallTimeMs: 1500 },
    });
    expect(result.verdict).toBe('timeout');
  });
});
