import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { RunCgroup } from './cgroup.js';
import type { ResolvedLimits } from './options.js';
import type { SandboxViolation, TestOutcome, ViolationKind } from './types.js';

const VIOLATION_KINDS = new Set<ViolationKind>([
  'file-read',
  'file-write',
  'process',
  'network',
  'tamper',
]);

/** The harness's final report: `assertions` counts the assertions the tests executed. */
export type Summary = { passed: number; total: number; assertions: number };
export type Outcome = {
  summary: Summary | null;
  /** Countable tests, reported by the harness before the program runs. */
  total: number | null;
  loadFailure: { phase: 'load' | 'setup'; kind: string; message: string } | null;
  tests: TestOutcome[];
  violations: SandboxViolation[];
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  /** Why the host killed the run (the first reason), whether or not the harness had reported. */
  killed: 'timeout' | 'output-limit' | 'aborted' | null;
  /** stdout or stderr brought more than `limits.outputBytes` bytes (counted, whatever the timing). */
  outputOverflowed: boolean;
  totalMs: number;
};

function emptyOutcome(): Outcome {
  return {
    summary: null,
    total: null,
    loadFailure: null,
    tests: [],
    violations: [],
    stdout: '',
    stderr: '',
    exitCode: null,
    signal: null,
    killed: null,
    outputOverflowed: false,
    totalMs: 0,
  };
}

/** A byte-capped collector: keeps the first `cap` bytes, reports overflow. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  overflowed = false;
  constructor(private readonly cap: number) {}
  push(chunk: Buffer): boolean {
    if (this.size + chunk.length > this.cap) {
      const room = this.cap - this.size;
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.size = this.cap;
      this.overflowed = true;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function killTree(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL'); // the process group (detached)
  } catch {}
  try {
    child.kill('SIGKILL');
  } catch {}
}

type ExecuteOptions = {
  limits: ResolvedLimits;
  nonce: string;
  /** Run as this uid (and gid), dropped by the spawn itself; the host must be root. */
  uid?: number;
  /** The run's cgroup: its `cgroup.procs` files are opened here and passed as fds 4, 5, … */
  cgroup?: RunCgroup | null;
  /** Written into a pipe at the fd after the cgroup descriptors (`harnessFd`), then closed. */
  harnessData?: Buffer;
  signal?: AbortSignal;
  cwd?: string;
};

/**
 * Spawns the run detached (its own process group). The `cgroup.procs` files are opened by the host
 * (root): the kernel checks the opener's credentials when the harness writes to them, so the
 * unprivileged sandbox user can join exactly this group, nothing else.
 */
function spawnRun(argv: string[], options: ExecuteOptions): ChildProcess {
  const [file, ...args] = argv as [string, ...string[]];
  const cgroupFds: number[] = [];
  try {
    for (const procs of options.cgroup?.procsFiles ?? []) {
      cgroupFds.push(openSync(procs, fsConstants.O_WRONLY));
    }
    const child = spawn(file, args, {
      stdio: [
        'pipe',
        'pipe',
        'pipe',
        'pipe',
        ...cgroupFds,
        ...(options.harnessData ? ['pipe' as const] : []),
      ],
      env: {},
      detached: true,
      cwd: options.cwd,
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
    });
    if (options.harnessData) {
      const harnessPipe = child.stdio[4 + cgroupFds.length] as Writable | null | undefined;
      harnessPipe?.on('error', () => {});
      harnessPipe?.end(options.harnessData);
    }
    return child;
  } finally {
    for (const fd of cgroupFds) closeSync(fd);
  }
}

/**
 * Records one line of the harness channel (fd 3) into `outcome`: lines signed with the nonce are
 * results (`N`, `T`, `S`, `E`), `V` lines are violations, anything else is a forgery (`tamper`).
 * Returns the tag of a signed line.
 */
function recordLine(line: string, nonce: string, outcome: Outcome): string | null {
  if (line.startsWith(`${nonce} `)) {
    const [tag, first, second, ...words] = line.slice(nonce.length + 1).split(' ');
    if (tag === 'T') {
      const status = second as TestOutcome['status'];
      outcome.tests.push({ index: Number(first), status, message: words.join(' ') });
    } else if (tag === 'N') {
      outcome.total = Number(first);
    } else if (tag === 'S') {
      const assertions = Number(words[0]);
      outcome.summary = {
        passed: Number(first),
        total: Number(second),
        assertions: Number.isInteger(assertions) ? assertions : 0,
      };
    } else if (tag === 'E') {
      outcome.loadFailure = {
        phase: first === 'setup' ? 'setup' : 'load',
        kind: second ?? 'error',
        message: words.join(' '),
      };
    }
    return tag ?? null;
  }
  if (line.startsWith('V ')) {
    const [, kind, ...detail] = line.split(' ');
    outcome.violations.push({
      kind: VIOLATION_KINDS.has(kind as ViolationKind) ? (kind as ViolationKind) : 'tamper',
      detail: detail.join(' ').slice(0, 300),
    });
  } else if (line.length > 0) {
    outcome.violations.push({ kind: 'tamper', detail: 'forged harness message' });
  }
  return null;
}

/**
 * Spawns one run and collects the harness channel (fd 3), stdout and stderr (each capped and
 * counted), killing the process tree at the wall-clock limit, on an output overflow or on abort.
 */
export function execute(
  argv: string[],
  payload: Buffer,
  options: ExecuteOptions,
): Promise<Outcome> {
  const { nonce } = options;
  const started = performance.now();
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawnRun(argv, options);
    } catch (error) {
      resolve({
        ...emptyOutcome(),
        stderr: `spawn failed: ${(error as Error).message}`,
        totalMs: performance.now() - started,
      });
      return;
    }
    const stdout = new CappedBuffer(options.limits.outputBytes);
    const stderr = new CappedBuffer(options.limits.outputBytes);
    const channel = new CappedBuffer(256 * 1024 + 1024 * 1024);
    const outcome = emptyOutcome();
    let pending = '';
    let finished = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const kill = (reason: Outcome['killed']) => {
      outcome.killed ??= reason;
      killTree(child);
    };
    const onLine = (line: string) => {
      if (recordLine(line, nonce, outcome) === 'E') {
        // The program cannot run: give the process a moment to exit, then end it. After the
        // summary (`S`) the program must end on its own within the wall-clock limit.
        graceTimer ??= setTimeout(() => killTree(child), 500);
      }
    };
    child.stdio[3]?.on('data', (chunk: Buffer) => {
      if (!channel.push(chunk)) {
        kill('output-limit');
        return;
      }
      pending += chunk.toString('utf8');
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        onLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
      }
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      if (!stdout.push(chunk)) kill('output-limit');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (!stderr.push(chunk)) kill('output-limit');
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(payload);
    const timer = setTimeout(() => kill('timeout'), options.limits.wallTimeMs);
    const onAbort = () => kill('aborted');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (exitCode: number | null, signal: string | null) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      options.signal?.removeEventListener('abort', onAbort);
      killTree(child); // stragglers in the group, if any
      if (pending.length > 0) onLine(pending);
      outcome.exitCode = exitCode;
      outcome.signal = signal;
      outcome.stdout = stdout.text();
      outcome.stderr = stderr.text();
      // Counted bytes decide, not the order in which the pipes and the harness's report arrived.
      outcome.outputOverflowed = stdout.overflowed || stderr.overflowed;
      outcome.totalMs = performance.now() - started;
      resolve(outcome);
    };
    child.on('error', (error) => {
      outcome.stderr = `spawn failed: ${error.message}`;
      done(null, null);
    });
    child.on('close', (code, signal) => done(code, signal));
  });
}
