import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import {
  closeSync,
  existsSync,
  constants as fsConstants,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import {
  AbortedError,
  ErrorCode,
  InvalidArgumentError,
  RlvrError,
  rejectIneffective,
  validateInteger,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { createRunCgroup, type RunCgroup } from './cgroup.js';
import { JAVASCRIPT_HARNESS } from './harness-javascript.js';
import { PYTHON_BOOT, PYTHON_HARNESS } from './harness-python.js';
import { defaultPythonPath, discoverRuntime, type RuntimeInfo } from './runtime.js';
import {
  type CodeLanguage,
  DEFAULT_SANDBOX_LIMITS,
  type IsolationReport,
  type RunTestsOptions,
  type RunTestsResult,
  type SandboxLimits,
  type SandboxVerdict,
  type SandboxViolation,
  type TestOutcome,
  type ViolationKind,
} from './types.js';

const FN = 'runTests';
const SANDBOX_WORK_DIR = '/sandbox';
/** Where bubblewrap writes the JavaScript harness (from a descriptor; read-only, in the sandbox). */
const SANDBOX_JS_HARNESS = '/rlvr/harness.cjs';
const MAX_SOURCE_CHARS = 4 * 1024 * 1024;
const DEVICE_READ_ROOTS = ['/dev/null', '/dev/zero', '/dev/urandom', '/dev/random'];
const VIOLATION_KINDS = new Set<ViolationKind>([
  'file-read',
  'file-write',
  'process',
  'network',
  'tamper',
]);

/** bubblewrap binary: `RLVR_BWRAP` (an explicit path) or `bwrap` from the system directories. */
function bwrapPath(): string | null {
  const configured = process.env.RLVR_BWRAP;
  if (configured !== undefined && configured !== '')
    return existsSync(configured) ? configured : null;
  return findOnPath('bwrap');
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The uid drop happens in the spawn itself (libuv: `setgroups(0)`, `setgid`, `setuid` between fork
 * and exec: no `setpriv` hop). libuv ignores a failing `setgroups`, which happens only where
 * `/proc/self/setgroups` says `deny`; there the drop is not used (root's groups would survive).
 */
function canDropUid(): boolean {
  if (!isRoot()) return false;
  try {
    return readFileSync('/proc/self/setgroups', 'utf8').trim() !== 'deny';
  } catch {
    return true; // kernels before 3.19 have no such file and no such restriction
  }
}

function findOnPath(name: string): string | null {
  for (const directory of ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin']) {
    const candidate = join(directory, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** Number of processes the given uid owns now (RLIMIT_NPROC counts them all). */
function processCountOf(uid: number): number {
  let count = 0;
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (statSync(`/proc/${entry}`).uid === uid) count++;
      } catch {}
    }
  } catch {}
  return count;
}

type ResolvedLimits = Required<SandboxLimits>;

/** `pythonPath` does nothing for JavaScript (it runs on the current Node): INEFFECTIVE_OPTION. @internal */
export function rejectPythonPathForJavaScript(
  language: CodeLanguage,
  pythonPath: unknown,
  functionName: string,
): void {
  if (language === 'javascript' && pythonPath !== undefined) {
    rejectIneffective({
      parameter: 'options.pythonPath',
      value: pythonPath,
      because: "options.language is 'javascript' (it runs on the current Node)",
      functionName,
    });
  }
}

/** Validates sandbox limits (known keys and ranges) and fills in the defaults. @internal */
export function resolveLimits(value: unknown, functionName: string = FN): ResolvedLimits {
  const limits = validateOptions<SandboxLimits>(value, {
    parameter: 'limits',
    functionName,
    known: Object.keys(DEFAULT_SANDBOX_LIMITS),
  });
  const integer = (key: keyof SandboxLimits, min: number, max: number): number =>
    limits[key] === undefined
      ? DEFAULT_SANDBOX_LIMITS[key]
      : validateInteger(limits[key], {
          parameter: `limits.${key}`,
          functionName,
          min,
          max,
        });
  const wallTimeMs = integer('wallTimeMs', 100, 3_600_000);
  return {
    wallTimeMs,
    cpuTimeMs: limits.cpuTimeMs === undefined ? wallTimeMs : integer('cpuTimeMs', 100, 3_600_000),
    memoryBytes: integer('memoryBytes', 64 * 1024 * 1024, 2 ** 45),
    outputBytes: integer('outputBytes', 1024, 1024 * 1024 * 1024),
    fileSizeBytes: integer('fileSizeBytes', 0, 2 ** 40),
    diskBytes: integer('diskBytes', 1024 * 1024, 2 ** 40),
    openFiles: integer('openFiles', 16, 65_536),
    processes: integer('processes', 16, 65_536),
  };
}

/** How runs start here, found once by {@link probeMode}. */
type Mode = { dropUid: boolean; cgroup: boolean };

type Plan = {
  language: CodeLanguage;
  runtime: RuntimeInfo;
  limits: ResolvedLimits;
  sandboxed: boolean;
  mode: Mode;
};

const probes = new Map<string, Promise<Mode>>();

/**
 * Builds argv for one run: prlimit → [bwrap …] → interpreter. The uid drop is a spawn option and the
 * cgroup join is done by the harness through descriptors (see `execute`), so the chain has no shell
 * or `setpriv` hop. Python runs `-c` (the precompiled harness arrives on stdin, see `PYTHON_BOOT`);
 * sandboxed Node runs the harness as a file that bubblewrap writes into the sandbox from descriptor
 * `harnessFd` (`--ro-bind-data`; a `-e` script costs Node ~8 ms more), unsandboxed Node runs `-e`.
 */
function buildCommand(plan: Plan, workDir: string, uid: number, harnessFd: number): string[] {
  const { runtime, limits, sandboxed, mode } = plan;
  const harnessFile = sandboxed && plan.language === 'javascript';
  const interpreter =
    plan.language === 'python'
      ? [
          runtime.executable,
          ...['-I', '-S', '-B', '-X', 'utf8', '-c'],
          runtime.compiledHarness ? PYTHON_BOOT : PYTHON_HARNESS,
        ]
      : [
          runtime.executable,
          '--experimental-permission',
          `--allow-fs-read=${workDir}`,
          ...(harnessFile ? [`--allow-fs-read=${SANDBOX_JS_HARNESS}`] : []),
          `--allow-fs-write=${workDir}`,
          '--disable-warning=ExperimentalWarning',
          `--max-old-space-size=${Math.max(32, Math.floor(limits.memoryBytes / 2 / 1024 / 1024))}`,
          '--stack-size=2048',
          ...(harnessFile ? [SANDBOX_JS_HARNESS] : ['-e', JAVASCRIPT_HARNESS]),
        ];
  const argv: string[] = [];
  const prlimit = findOnPath('prlimit');
  if (prlimit) {
    const cpuSeconds = Math.ceil(limits.cpuTimeMs / 1000);
    // V8 reserves ~0.6 GiB of address space before running anything, so Node gets 1 GiB of
    // headroom over the memory limit; its real usage is bounded by --max-old-space-size and, as
    // root, by the memory cgroup.
    const addressSpace =
      plan.language === 'javascript' ? limits.memoryBytes + 1024 * 1024 * 1024 : limits.memoryBytes;
    const ownUid = mode.dropUid ? uid : (process.getuid?.() ?? 0);
    const nproc = limits.processes + (mode.dropUid || ownUid === 0 ? 0 : processCountOf(ownUid));
    argv.push(
      prlimit,
      `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
      `--as=${addressSpace}`,
      `--fsize=${limits.fileSizeBytes}`,
      `--nofile=${limits.openFiles}`,
      `--nproc=${nproc}`,
      '--core=0',
      '--',
    );
  }
  if (sandboxed) {
    argv.push(
      bwrapPath() ?? 'bwrap',
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/bin',
      '--setenv',
      'HOME',
      SANDBOX_WORK_DIR,
      '--setenv',
      'TMPDIR',
      SANDBOX_WORK_DIR,
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--hostname',
      'sandbox',
    );
    if (mode.dropUid || !isRoot()) argv.push('--unshare-user', '--disable-userns');
    for (const [source, destination] of runtime.binds) argv.push('--ro-bind', source, destination);
    if (harnessFile) argv.push('--ro-bind-data', String(harnessFd), SANDBOX_JS_HARNESS);
    argv.push(
      '--dev',
      '/dev',
      '--size',
      String(limits.diskBytes),
      '--tmpfs',
      SANDBOX_WORK_DIR,
      '--chdir',
      SANDBOX_WORK_DIR,
      '--remount-ro',
      '/dev',
      '--remount-ro',
      '/',
    );
  }
  argv.push(...interpreter);
  return argv;
}

/**
 * Runs a trivial program through the full start-up once per interpreter, to see which mode works
 * here: as root, an unprivileged uid with a cgroup first, then without the cgroup (e.g. a cgroup v2
 * kernel older than 5.16 checks the writer's, not the opener's, credentials), then as the current
 * user.
 */
function probeMode(language: CodeLanguage, runtime: RuntimeInfo): Promise<Mode> {
  const key = `${language}:${runtime.executable}:${bwrapPath()}`;
  let found = probes.get(key);
  if (!found) {
    found = (async () => {
      if (!bwrapPath()) {
        throw new RlvrError(
          ErrorCode.UNAVAILABLE,
          'runTests() needs bubblewrap (`bwrap`) for isolation, and it is not installed. Install it ' +
            '(Debian/Ubuntu: `apt-get install bubblewrap`), or pass `isolation: ' +
            "'unsafe-no-isolation'` to run untrusted code on the host without a sandbox.",
        );
      }
      const candidates: Mode[] = [];
      for (const dropUid of canDropUid() ? [true, false] : [false]) {
        candidates.push({ dropUid, cgroup: true }, { dropUid, cgroup: false });
      }
      const failures: string[] = [];
      for (const mode of candidates) {
        const limits = DEFAULT_SANDBOX_LIMITS;
        const cgroup = mode.cgroup ? createRunCgroup(limits) : null;
        if (mode.cgroup && !cgroup) continue; // no usable cgroups here
        const plan: Plan = { language, runtime, limits, sandboxed: true, mode };
        const program = language === 'python' ? 'x = 1' : 'const x = 1;';
        const tests = language === 'python' ? ['assert x == 1'] : ['assert.strictEqual(x, 1);'];
        const uid = randomSandboxUid();
        const nonce = randomNonce();
        let outcome: Outcome;
        try {
          outcome = await execute(
            buildCommand(plan, SANDBOX_WORK_DIR, uid, harnessFdAfter(cgroup)),
            payloadFor(program, tests, undefined, plan, SANDBOX_WORK_DIR, nonce, cgroup),
            {
              limits,
              nonce,
              uid: mode.dropUid ? uid : undefined,
              cgroup,
              harnessData: harnessDataFor(plan),
            },
          );
        } finally {
          cgroup?.dispose();
        }
        if (outcome.summary && outcome.summary.passed === 1) return mode;
        const detail =
          outcome.loadFailure?.message ||
          outcome.stderr.slice(0, 300).trim() ||
          `exit ${outcome.exitCode}`;
        failures.push(
          `${mode.dropUid ? 'as an unprivileged uid' : 'as the current user'}` +
            `${cgroup ? ' in a cgroup' : ''}: ${detail}`,
        );
      }
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        `runTests(): bubblewrap is installed but cannot create a sandbox here (${failures.join('; ')}). ` +
          "Allow unprivileged user namespaces, or pass `isolation: 'unsafe-no-isolation'`.",
      );
    })();
    probes.set(key, found);
    found.catch(() => probes.delete(key));
  }
  return found;
}

/** The descriptor that carries the JavaScript harness into bubblewrap: after the cgroup ones. */
function harnessFdAfter(cgroup: RunCgroup | null): number {
  return 4 + (cgroup?.procsFiles.length ?? 0);
}

const JAVASCRIPT_HARNESS_BYTES = Buffer.from(JAVASCRIPT_HARNESS, 'utf8');

function harnessDataFor(plan: Plan): Buffer | undefined {
  return plan.sandboxed && plan.language === 'javascript' ? JAVASCRIPT_HARNESS_BYTES : undefined;
}

function randomSandboxUid(): number {
  return 1_000_000 + randomInt(0, 1_000_000);
}

function randomNonce(): string {
  return randomBytes(24).toString('hex');
}

/**
 * The harness's stdin: a header line of space-separated byte lengths, then the UTF-8 fields back to
 * back — nonce, workDir, programFile, program, setup, tests kind (`s` one string | `a` array),
 * readRoots (NUL-separated), the number of cgroup descriptors (fds 4, 5, …), then the tests.
 */
function payloadFor(
  program: string,
  tests: string | readonly string[],
  setup: string | undefined,
  plan: Plan,
  workDir: string,
  nonce: string,
  cgroup: RunCgroup | null,
): Buffer {
  const fields = [
    nonce,
    workDir,
    `${workDir}/${plan.language === 'python' ? 'solution.py' : 'solution.js'}`,
    program,
    setup ?? '',
    typeof tests === 'string' ? 's' : 'a',
    [workDir, ...plan.runtime.readRoots, ...DEVICE_READ_ROOTS].join('\0'),
    String(cgroup?.procsFiles.length ?? 0),
    ...(typeof tests === 'string' ? [tests] : tests),
  ].map((field) => Buffer.from(field, 'utf8'));
  const header = Buffer.from(`${fields.map((field) => field.length).join(' ')}\n`, 'latin1');
  const harness = plan.language === 'python' ? plan.runtime.compiledHarness : undefined;
  // The precompiled Python harness goes first (see PYTHON_BOOT), then the harness's payload.
  return harness
    ? Buffer.concat([Buffer.from(`${harness.length}\n`, 'latin1'), harness, header, ...fields])
    : Buffer.concat([header, ...fields]);
}

type Summary = { passed: number; total: number };
type Outcome = {
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
  killed: 'timeout' | 'output-limit' | 'aborted' | null;
  totalMs: number;
};

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

/** Spawns one run and collects the harness channel (fd 3), stdout and stderr. */
function execute(
  argv: string[],
  payload: Buffer,
  options: {
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
  },
): Promise<Outcome> {
  const { nonce } = options;
  const started = performance.now();
  return new Promise((resolve) => {
    const [file, ...args] = argv as [string, ...string[]];
    // Opened by the host (root): the kernel checks the opener's credentials when the harness
    // writes to them, so the unprivileged sandbox user can join exactly this group, nothing else.
    const cgroupFds: number[] = [];
    let child: ChildProcess;
    try {
      for (const procs of options.cgroup?.procsFiles ?? []) {
        cgroupFds.push(openSync(procs, fsConstants.O_WRONLY));
      }
      child = spawn(file, args, {
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
    } catch (error) {
      for (const fd of cgroupFds) closeSync(fd);
      resolve({
        summary: null,
        total: null,
        loadFailure: null,
        tests: [],
        violations: [],
        stdout: '',
        stderr: `spawn failed: ${(error as Error).message}`,
        exitCode: null,
        signal: null,
        killed: null,
        totalMs: performance.now() - started,
      });
      return;
    }
    for (const fd of cgroupFds) closeSync(fd);
    if (options.harnessData) {
      const harnessPipe = child.stdio[4 + cgroupFds.length] as Writable | null | undefined;
      harnessPipe?.on('error', () => {});
      harnessPipe?.end(options.harnessData);
    }
    const stdout = new CappedBuffer(options.limits.outputBytes);
    const stderr = new CappedBuffer(options.limits.outputBytes);
    const channel = new CappedBuffer(256 * 1024 + 1024 * 1024);
    const outcome: Outcome = {
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
      totalMs: 0,
    };
    let pending = '';
    let finished = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const kill = (reason: Outcome['killed']) => {
      if (outcome.killed === null && outcome.summary === null && outcome.loadFailure === null) {
        outcome.killed = reason;
      }
      killTree(child);
    };
    const onLine = (line: string) => {
      if (line.startsWith(`${nonce} `)) {
        const rest = line.slice(nonce.length + 1);
        const [tag, first, second, ...words] = rest.split(' ');
        if (tag === 'T') {
          const status = second as TestOutcome['status'];
          outcome.tests.push({ index: Number(first), status, message: words.join(' ') });
        } else if (tag === 'N') {
          outcome.total = Number(first);
        } else if (tag === 'S') {
          outcome.summary = { passed: Number(first), total: Number(second) };
        } else if (tag === 'E') {
          outcome.loadFailure = {
            phase: first === 'setup' ? 'setup' : 'load',
            kind: second ?? 'error',
            message: words.join(' '),
          };
        }
        if (tag === 'S' || tag === 'E') {
          // The verdict is known: give the process a moment to exit, then end it.
          graceTimer = setTimeout(() => killTree(child), 500);
        }
        return;
      }
      if (line.startsWith('V ')) {
        const [, kind, ...detail] = line.split(' ');
        outcome.violations.push({
          kind: VIOLATION_KINDS.has(kind as ViolationKind) ? (kind as ViolationKind) : 'tamper',
          detail: detail.join(' ').slice(0, 300),
        });
        return;
      }
      if (line.length > 0) {
        outcome.violations.push({ kind: 'tamper', detail: 'forged harness message' });
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

const NODE_OOM =
  /JavaScript heap out of memory|Fatal process out of memory|Reached heap limit|allocation failed|std::bad_alloc/i;

function decide(
  outcome: Outcome,
  oomKills: number,
  language: CodeLanguage,
): { verdict: SandboxVerdict; reason: string } {
  if (outcome.violations.length > 0) {
    const first = outcome.violations[0] as SandboxViolation;
    return { verdict: 'blocked', reason: `sandbox violation: ${first.kind} (${first.detail})` };
  }
  const { summary, loadFailure } = outcome;
  if (summary && summary.total === summary.passed && outcome.tests.length === summary.total) {
    return { verdict: 'pass', reason: `all ${summary.total} tests passed` };
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
  if (outcome.killed === 'output-limit') {
    return { verdict: 'output-limit', reason: 'output exceeded the cap' };
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

/**
 * Runs a program against hidden tests in a deny-by-default sandbox and returns a structured verdict.
 * Never throws on the program's behaviour (syntax errors, crashes, exploits all become verdicts);
 * throws only on invalid options, when bubblewrap is unusable (code `UNAVAILABLE`, unless
 * `isolation: 'unsafe-no-isolation'`), or when aborted (`ABORTED`).
 *
 * Isolation (details in `docs/code-sandbox.md`): bubblewrap with every namespace unshared (no
 * network, own PID namespace), a size-capped private tmpfs work dir, read-only binds of only the
 * interpreter, its libraries and (Python) its stdlib; rlimits (CPU, address space, file size, open
 * files, processes) via `prlimit`; an unprivileged throw-away uid and a pids+memory cgroup when the
 * host runs as root; wall-clock timeout killing the whole tree; capped stdout/stderr. The harness
 * keeps the tests hidden, reports results with a secret nonce only it knows, and reports exploit
 * attempts (Python audit hooks; a guarded `require` in Node) even when the program swallows the
 * resulting error: any violation makes the verdict `blocked`.
 *
 * @example
 * ```ts
 * const result = await runTests({
 *   language: 'python',
 *   program: 'def add(a, b):\n    return a + b\n',
 *   tests: ['assert add(1, 2) == 3', 'assert add(-1, 1) == 0'],
 *   limits: { wallTimeMs: 5000 },
 * });
 * result.verdict; // 'pass'
 * result.passed; // 2
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the bad option.
 * @throws {RlvrError} `UNAVAILABLE` when bubblewrap is missing or unusable.
 * @throws {AbortedError} `ABORTED` when `signal` aborts the run.
 */
export async function runTests(options: RunTestsOptions): Promise<RunTestsResult> {
  const input = validateOptions<RunTestsOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: [
      'language',
      'program',
      'tests',
      'setup',
      'limits',
      'partialCredit',
      'isolation',
      'pythonPath',
      'signal',
    ],
  });
  if (options === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName: FN,
      value: options,
      expected: 'an options object',
    });
  }
  const language = validateOneOf(input.language, ['python', 'javascript'] as const, {
    parameter: 'options.language',
    functionName: FN,
  });
  rejectPythonPathForJavaScript(language, input.pythonPath, FN);
  if (typeof input.program !== 'string' || input.program.length > MAX_SOURCE_CHARS) {
    throw new InvalidArgumentError({
      parameter: 'options.program',
      functionName: FN,
      value: input.program,
      expected: `a string of at most ${MAX_SOURCE_CHARS} characters`,
    });
  }
  const tests = input.tests;
  const testsOk =
    (typeof tests === 'string' && tests.length <= MAX_SOURCE_CHARS) ||
    (Array.isArray(tests) &&
      tests.length > 0 &&
      tests.length <= 10_000 &&
      tests.every((test) => typeof test === 'string' && test.length <= MAX_SOURCE_CHARS));
  if (!testsOk) {
    throw new InvalidArgumentError({
      parameter: 'options.tests',
      functionName: FN,
      value: tests,
      expected: 'a string or a non-empty array (at most 10000) of strings',
    });
  }
  if (input.setup !== undefined && typeof input.setup !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.setup',
      functionName: FN,
      value: input.setup,
      expected: 'a string',
    });
  }
  if (input.partialCredit !== undefined && typeof input.partialCredit !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.partialCredit',
      functionName: FN,
      value: input.partialCredit,
      expected: 'a boolean',
    });
  }
  const isolation = validateOneOf(
    input.isolation ?? 'bubblewrap',
    ['bubblewrap', 'unsafe-no-isolation'] as const,
    {
      parameter: 'options.isolation',
      functionName: FN,
    },
  );
  if (
    input.pythonPath !== undefined &&
    (typeof input.pythonPath !== 'string' || input.pythonPath === '')
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.pythonPath',
      functionName: FN,
      value: input.pythonPath,
      expected: 'a non-empty path string',
    });
  }
  if (input.signal !== undefined && !(input.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError({
      parameter: 'options.signal',
      functionName: FN,
      value: input.signal,
      expected: 'an AbortSignal',
    });
  }
  const limits = resolveLimits(input.limits);
  if (input.signal?.aborted)
    throw new AbortedError({ operation: 'runTests()', cause: input.signal.reason });

  const interpreter =
    language === 'python' ? (input.pythonPath ?? defaultPythonPath()) : process.execPath;
  if (!interpreter) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      'runTests(): no python3 interpreter found (tried /usr/bin/python3 and PATH); pass `pythonPath`.',
    );
  }
  let runtime: RuntimeInfo;
  try {
    runtime = await discoverRuntime(language, interpreter);
  } catch (cause) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `runTests(): cannot start the ${language} interpreter '${interpreter}'`,
      { cause },
    );
  }
  const sandboxed = isolation === 'bubblewrap';
  const mode = sandboxed ? await probeMode(language, runtime) : { dropUid: false, cgroup: false };
  const plan: Plan = { language, runtime, limits, sandboxed, mode };

  const hostWorkDir = sandboxed ? undefined : mkdtempSync(join(tmpdir(), 'rlvr-work-'));
  const workDir = hostWorkDir ?? SANDBOX_WORK_DIR;
  const cgroup =
    sandboxed && mode.cgroup
      ? createRunCgroup({ processes: limits.processes, memoryBytes: limits.memoryBytes })
      : null;
  const uid = randomSandboxUid();
  const nonce = randomNonce();
  try {
    const outcome = await execute(
      buildCommand(plan, workDir, uid, harnessFdAfter(cgroup)),
      payloadFor(
        input.program,
        tests as string | string[],
        input.setup,
        plan,
        workDir,
        nonce,
        cgroup,
      ),
      {
        limits,
        nonce,
        uid: mode.dropUid ? uid : undefined,
        cgroup,
        harnessData: harnessDataFor(plan),
        signal: input.signal,
        cwd: hostWorkDir,
      },
    );
    if (outcome.killed === 'aborted') {
      throw new AbortedError({ operation: 'runTests()', cause: input.signal?.reason });
    }
    const oomKills = cgroup?.oomKills() ?? 0;
    const { verdict, reason } = decide(outcome, oomKills, language);
    const total = outcome.summary?.total ?? outcome.total;
    const passed = outcome.tests.filter((test) => test.status === 'pass').length;
    let score = 0;
    if (verdict === 'pass') score = 1;
    else if (verdict !== 'blocked' && input.partialCredit && total) score = passed / total;
    const report: IsolationReport = {
      mode: sandboxed ? 'bubblewrap' : 'none',
      droppedUid: mode.dropUid,
      cgroup: cgroup !== null,
      interpreter: runtime.executable,
    };
    return {
      verdict,
      passed,
      total,
      score,
      tests: outcome.tests,
      violations: outcome.violations,
      reason,
      stdout: outcome.stdout,
      stderr: outcome.stderr,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timings: { totalMs: outcome.totalMs },
      isolation: report,
    };
  } finally {
    cgroup?.dispose();
    if (hostWorkDir) rmSync(hostWorkDir, { recursive: true, force: true });
  }
}
