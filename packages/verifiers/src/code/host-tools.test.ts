import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, RlvrError } from '@rlvr/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { assertLinux, findOnPath, reachableByOthers } from './host-tools.js';
import { runTests } from './run-tests.js';
import { defaultPythonPath } from './runtime.js';
import { HAS_BWRAP, onPath } from './sandbox-test-support.js';
import type { RunTestsOptions } from './types.js';

// Host tools (bwrap, prlimit, python3) come from PATH, can be pinned by option, and a missing
// prlimit is an UNAVAILABLE error unless weaker limits are explicitly allowed.
const limits = { wallTimeMs: 8000 };
const JS: RunTestsOptions = {
  language: 'javascript',
  program: 'function add(a, b) { return a + b; }',
  tests: ['assert.strictEqual(add(1, 2), 3);'],
  limits,
};
const PY: RunTestsOptions = {
  language: 'python',
  program: 'def add(a, b):\n    return a + b\n',
  tests: ['assert add(1, 2) == 3'],
  limits,
};

const savedPath = process.env.PATH;
const savedBwrap = process.env.RLVR_BWRAP;
const folders: string[] = [];

/** A folder holding links to the named host tools only; it becomes the whole PATH. */
function pathWith(...tools: string[]): string {
  const folder = mkdtempSync(join(tmpdir(), 'rlvr-path-'));
  folders.push(folder);
  for (const tool of tools) symlinkSync(onPath(tool) as string, join(folder, tool));
  return folder;
}

async function failure(options: RunTestsOptions): Promise<RlvrError> {
  const error = await runTests(options).catch((caught: unknown) => caught);
  expect(RlvrError.isInstance(error), String(error)).toBe(true);
  return error as RlvrError;
}

afterEach(() => {
  process.env.PATH = savedPath;
  if (savedBwrap === undefined) delete process.env.RLVR_BWRAP;
  else process.env.RLVR_BWRAP = savedBwrap;
});
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

describe('host tool resolution', () => {
  it('should say "Linux only" for any other platform', () => {
    for (const platform of ['darwin', 'win32', 'freebsd']) {
      expect(() => assertLinux('runTests', platform)).toThrow(/runTests\(\) is Linux only.*'/);
      expect(() => assertLinux('runTests', platform)).toThrow(platform);
    }
    expect(() => assertLinux('runTests', 'linux')).not.toThrow();
  });

  it('should skip a tool the sandbox user cannot reach (e.g. under a 0700 folder)', () => {
    const folder = mkdtempSync(join(tmpdir(), 'rlvr-private-'));
    folders.push(folder);
    const hidden = join(folder, 'python3');
    writeFileSync(hidden, '#!/bin/sh\n', { mode: 0o755 });
    chmodSync(folder, 0o700);
    expect(reachableByOthers(hidden)).toBe(false);
    process.env.PATH = folder;
    expect(findOnPath('python3')).toBe(hidden);
    expect(findOnPath('python3', reachableByOthers)).toBe(null);
    chmodSync(folder, 0o755);
    expect(reachableByOthers(hidden)).toBe(true);
  });
});

describe('runTests on a host that is not Linux', () => {
  it('should refuse with UNAVAILABLE saying "Linux only"', async () => {
    const platform = Object.getOwnPropertyDescriptor(process, 'platform') as PropertyDescriptor;
    Object.defineProperty(process, 'platform', { ...platform, value: 'darwin' });
    try {
      for (const isolation of ['bubblewrap', 'unsafe-no-isolation'] as const) {
        const error = await failure({ ...JS, isolation });
        expect(error.code).toBe(ErrorCode.UNAVAILABLE);
        expect(error.message).toMatch(/Linux only/);
        expect(error.message).toMatch(/darwin/);
      }
    } finally {
      Object.defineProperty(process, 'platform', platform);
    }
  });
});

describe.skipIf(!HAS_BWRAP)('runTests host tools', { timeout: 60_000 }, () => {
  it('should find bwrap and prlimit through PATH and report them', async () => {
    const folder = pathWith('bwrap', 'prlimit');
    process.env.PATH = folder;
    const result = await runTests(JS);
    expect(result.verdict, result.reason).toBe('pass');
    expect(result.isolation.bwrap).toBe(join(folder, 'bwrap'));
    expect(result.isolation.prlimit).toBe(join(folder, 'prlimit'));
  });

  it('should refuse with UNAVAILABLE when bwrap is not on PATH', async () => {
    process.env.PATH = pathWith('prlimit');
    const error = await failure(JS);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toMatch(/bubblewrap/);
  });

  it('should use pinned paths (bwrapPath, prlimitPath) over PATH', async () => {
    const bwrap = onPath('bwrap') as string;
    const prlimit = onPath('prlimit') as string;
    process.env.PATH = pathWith();
    const result = await runTests({ ...JS, bwrapPath: bwrap, prlimitPath: prlimit });
    expect(result.verdict, result.reason).toBe('pass');
    expect(result.isolation.bwrap).toBe(bwrap);
    expect(result.isolation.prlimit).toBe(prlimit);
    const missing = await failure({ ...JS, bwrapPath: '/nonexistent/bwrap', prlimitPath: prlimit });
    expect(missing.code).toBe(ErrorCode.UNAVAILABLE);
    expect(missing.message).toMatch(/\/nonexistent\/bwrap/);
  });

  it('should reject bwrapPath without bubblewrap (INEFFECTIVE_OPTION)', async () => {
    const error = await failure({
      ...JS,
      isolation: 'unsafe-no-isolation',
      bwrapPath: onPath('bwrap') as string,
    });
    expect(error.code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    expect(error.message).toMatch(/bwrapPath/);
  });

  it('should refuse with UNAVAILABLE when prlimit is missing, unless allowWeakerLimits', async () => {
    process.env.PATH = pathWith('bwrap');
    const error = await failure(JS);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toMatch(/prlimit/);
    expect(error.message).toMatch(/allowWeakerLimits/);
    const weaker = await runTests({ ...JS, allowWeakerLimits: true });
    expect(weaker.verdict, weaker.reason).toBe('pass');
    expect(weaker.isolation.prlimit).toBe(null);
    const applied = weaker.isolation.limitsApplied;
    expect(applied.cpuTimeMs).toBe(false);
    expect(applied.fileSizeBytes).toBe(false);
    expect(applied.openFiles).toBe(false);
    expect(applied.memoryBytes).toBe(weaker.isolation.cgroup);
    expect(applied.processes).toBe(weaker.isolation.cgroup);
    expect(applied.wallTimeMs && applied.outputBytes && applied.diskBytes).toBe(true);
  });

  it('should report every limit applied when prlimit is there', async () => {
    const result = await runTests(JS);
    expect(result.verdict, result.reason).toBe('pass');
    expect(Object.values(result.isolation.limitsApplied).every(Boolean)).toBe(true);
    expect(Object.keys(result.isolation.limitsApplied).sort()).toEqual([
      'cpuTimeMs',
      'diskBytes',
      'fileSizeBytes',
      'memoryBytes',
      'openFiles',
      'outputBytes',
      'processes',
      'wallTimeMs',
    ]);
  });

  it('should find python3 through PATH, not in a fixed folder', async () => {
    const python = defaultPythonPath() as string;
    process.env.PATH = pathWith('bwrap', 'prlimit');
    const error = await failure(PY);
    expect(error.code).toBe(ErrorCode.UNAVAILABLE);
    expect(error.message).toMatch(/python3/);
    const folder = pathWith('bwrap', 'prlimit');
    symlinkSync(python, join(folder, 'python3'));
    process.env.PATH = folder;
    const result = await runTests(PY);
    expect(result.verdict, result.reason).toBe('pass');
  });
});
