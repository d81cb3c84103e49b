import { existsSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import {
  AbortedError,
  ErrorCode,
  InvalidArgumentError,
  RlvrError,
  validateOptions,
} from '@rlvr/core';
import { randomNonce, SANDBOX_HOME, SANDBOX_WORK_DIR } from './command.js';
import { execute } from './execute.js';
import { assertLinux, isRoot, resolveHostTools } from './host-tools.js';
import { resolveLimits } from './options.js';
import { defaultPythonPath, discoverRuntime } from './runtime.js';
import type { SandboxLimits } from './types.js';

const FN = 'runInWorkspace';

/** Options of {@link runInWorkspace}. */
export type RunInWorkspaceOptions = {
  /** Python source to run (`python3 -I -S -B -`, the program on stdin). */
  code: string;
  /**
   * Host folder mounted read-write at `/sandbox` (the program's working directory): files it
   * writes stay there for the next run, so one folder is one persistent workspace.
   */
  workspace: string;
  /**
   * Paths inside `workspace` (relative, existing) mounted read-only on top of it: the program can
   * read them but every write fails (`EROFS`).
   */
  readOnly?: readonly string[];
  /** Per-run limits (see {@link SandboxLimits}; `diskBytes` does not apply: the folder is the host's). */
  limits?: SandboxLimits;
  pythonPath?: string;
  bwrapPath?: string;
  prlimitPath?: string;
  /** Kills the run; the promise rejects with `ABORTED`. */
  signal?: AbortSignal;
};

/**
 * How a workspace run ended: `ok` (exit 0), `error` (non-zero exit or a signal), `timeout` (wall or
 * CPU limit), `memory` (a `MemoryError`), `output-limit` (stdout or stderr over the cap).
 */
export type WorkspaceRunStatus = 'ok' | 'error' | 'timeout' | 'memory' | 'output-limit';

/** Result of {@link runInWorkspace}; never thrown on the program's behaviour. */
export type WorkspaceRunResult = {
  status: WorkspaceRunStatus;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timeMs: number;
};

const KEYS = [
  'code',
  'workspace',
  'readOnly',
  'limits',
  'pythonPath',
  'bwrapPath',
  'prlimitPath',
  'signal',
] as const;

function checkReadOnly(workspace: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError({
      parameter: 'options.readOnly',
      functionName: FN,
      value,
      expected: 'an array of relative paths inside the workspace',
    });
  }
  return value.map((path, index) => {
    const clean = typeof path === 'string' ? normalize(path) : '';
    if (clean === '' || clean === '.' || isAbsolute(clean) || clean.startsWith('..')) {
      throw new InvalidArgumentError({
        parameter: `options.readOnly[${index}]`,
        functionName: FN,
        value: path,
        expected: 'a relative path inside the workspace (no .., not absolute)',
      });
    }
    if (!existsSync(join(workspace, clean))) {
      throw new InvalidArgumentError({
        parameter: `options.readOnly[${index}]`,
        functionName: FN,
        value: path,
        expected: 'a path that exists in the workspace (bubblewrap mounts existing paths only)',
      });
    }
    return clean;
  });
}

/**
 * Runs Python in bubblewrap (no network, no other host files, prlimit limits) with `workspace`
 * mounted read-write as its working directory and `readOnly` paths mounted read-only on top: the
 * code sandbox of {@link runTests}, made persistent across calls for agents' tools.
 *
 * @example
 * ```ts
 * const result = await runInWorkspace({ code: "open('a.txt','w').write('hi')", workspace: dir });
 * result.status; // 'ok' — dir/a.txt now holds 'hi'
 * ```
 * @throws {InvalidArgumentError} naming the bad option.
 * @throws {RlvrError} `UNAVAILABLE` when bubblewrap, prlimit or python3 is missing.
 * @throws {AbortedError} `ABORTED` when `signal` aborts the run.
 */
export async function runInWorkspace(options: RunInWorkspaceOptions): Promise<WorkspaceRunResult> {
  const input = validateOptions<RunInWorkspaceOptions>(options ?? null, {
    parameter: 'options',
    functionName: FN,
    known: KEYS,
  });
  if (typeof input.code !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.code',
      functionName: FN,
      value: input.code,
      expected: 'Python source (a string)',
    });
  }
  if (
    typeof input.workspace !== 'string' ||
    !existsSync(input.workspace) ||
    !statSync(input.workspace).isDirectory()
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.workspace',
      functionName: FN,
      value: input.workspace,
      expected: 'an existing folder',
    });
  }
  const workspace = realpathSync(input.workspace);
  const readOnly = checkReadOnly(workspace, input.readOnly);
  const limits = resolveLimits(input.limits, FN);
  if (input.signal?.aborted)
    throw new AbortedError({ operation: `${FN}()`, cause: input.signal.reason });
  assertLinux(FN);
  const tools = resolveHostTools(input);
  const python = input.pythonPath ?? defaultPythonPath();
  if (!tools.bwrap.path || !tools.prlimit.path || !python) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `${FN}(): needs bubblewrap, prlimit and python3 (${[tools.bwrap.path ? '' : tools.bwrap.missing, tools.prlimit.path ? '' : tools.prlimit.missing, python ? '' : 'python3 not on PATH'].filter(Boolean).join('; ')})`,
    );
  }
  const runtime = await discoverRuntime('python', python);
  const cpuSeconds = Math.ceil(limits.cpuTimeMs / 1000);
  const argv = [
    tools.prlimit.path,
    `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--fsize=${limits.fileSizeBytes}`,
    `--nofile=${limits.openFiles}`,
    '--core=0',
    '--',
    tools.bwrap.path,
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...['--setenv', 'PATH', '/usr/bin:/bin'],
    ...['--setenv', 'HOME', SANDBOX_HOME],
    ...['--setenv', 'TMPDIR', SANDBOX_WORK_DIR],
    ...['--setenv', 'LANG', 'C.UTF-8'],
    ...['--hostname', 'sandbox'],
    ...(isRoot() ? [] : ['--unshare-user']),
    ...runtime.binds.flatMap(([source, destination]) => ['--ro-bind', source, destination]),
    ...['--dev', '/dev'],
    ...['--bind', workspace, SANDBOX_WORK_DIR],
    ...readOnly.flatMap((path) => [
      '--ro-bind',
      join(workspace, path),
      `${SANDBOX_WORK_DIR}/${path}`,
    ]),
    ...['--chdir', SANDBOX_WORK_DIR],
    ...['--remount-ro', '/dev', '--remount-ro', '/'],
    runtime.executable,
    ...['-E', '-s', '-S', '-B', '-X', 'utf8', '-'], // not -I: the workspace (cwd) is importable
  ];
  const outcome = await execute(argv, Buffer.from(input.code, 'utf8'), {
    limits,
    nonce: randomNonce(),
    signal: input.signal,
  });
  if (outcome.killed === 'aborted') {
    throw new AbortedError({ operation: `${FN}()`, cause: input.signal?.reason });
  }
  let status: WorkspaceRunStatus = outcome.exitCode === 0 ? 'ok' : 'error';
  if (outcome.killed === 'output-limit' || outcome.outputOverflowed) status = 'output-limit';
  else if (outcome.killed === 'timeout' || outcome.signal === 'SIGXCPU') status = 'timeout';
  else if (status === 'error' && /\bMemoryError\b/.test(outcome.stderr)) status = 'memory';
  return {
    status,
    exitCode: outcome.exitCode,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    timeMs: outcome.totalMs,
  };
}
