import { randomBytes, randomInt } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import type { RunCgroup } from './cgroup.js';
import { JAVASCRIPT_HARNESS } from './harness-javascript.js';
import { PYTHON_BOOT, PYTHON_HARNESS } from './harness-python.js';
import { isRoot } from './host-tools.js';
import type { ResolvedLimits } from './options.js';
import type { RuntimeInfo } from './runtime.js';
import type { CodeLanguage, SandboxLimits } from './types.js';

export const SANDBOX_WORK_DIR = '/sandbox';
/**
 * `HOME` inside the sandbox: outside the work dir and absent (the root is read-only), so writing
 * `~/.bashrc` is a write outside the work dir like any other (reported and denied).
 */
export const SANDBOX_HOME = '/home/sandbox';
/** Where bubblewrap writes the JavaScript harness (from a descriptor; read-only, in the sandbox). */
const SANDBOX_JS_HARNESS = '/rlvr/harness.cjs';
const DEVICE_READ_ROOTS = ['/dev/null', '/dev/zero', '/dev/urandom', '/dev/random'];

/** How runs start here, found once per interpreter by the start-up probe. */
export type Mode = { dropUid: boolean; cgroup: boolean };

/** Everything one run's command line depends on. `bwrap` is null exactly when not sandboxed. */
export type Plan = {
  language: CodeLanguage;
  runtime: RuntimeInfo;
  limits: ResolvedLimits;
  mode: Mode;
  bwrap: string | null;
  /** null: run without rlimits (only with `allowWeakerLimits`). */
  prlimit: string | null;
};

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

export function randomSandboxUid(): number {
  return 1_000_000 + randomInt(0, 1_000_000);
}

export function randomNonce(): string {
  return randomBytes(24).toString('hex');
}

/** The descriptor that carries the JavaScript harness into bubblewrap: after the cgroup ones. */
export function harnessFdAfter(cgroup: RunCgroup | null): number {
  return 4 + (cgroup?.procsFiles.length ?? 0);
}

const JAVASCRIPT_HARNESS_BYTES = Buffer.from(JAVASCRIPT_HARNESS, 'utf8');

export function harnessDataFor(plan: Plan): Buffer | undefined {
  return plan.bwrap && plan.language === 'javascript' ? JAVASCRIPT_HARNESS_BYTES : undefined;
}

/** Which limits a run with this plan enforces (see `IsolationReport.limitsApplied`). */
export function limitsApplied(plan: Plan, cgroup: boolean): Record<keyof SandboxLimits, boolean> {
  const rlimits = plan.prlimit !== null;
  return {
    wallTimeMs: true,
    cpuTimeMs: rlimits,
    memoryBytes: rlimits || cgroup,
    outputBytes: true,
    fileSizeBytes: rlimits,
    diskBytes: plan.bwrap !== null,
    openFiles: rlimits,
    processes: rlimits || cgroup,
  };
}

function interpreterArgv(plan: Plan, workDir: string): string[] {
  const { runtime, limits } = plan;
  if (plan.language === 'python') {
    return [
      runtime.executable,
      ...['-I', '-S', '-B', '-X', 'utf8', '-c'],
      runtime.compiledHarness ? PYTHON_BOOT : PYTHON_HARNESS,
    ];
  }
  const harnessFile = plan.bwrap !== null;
  return [
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
}

function prlimitArgv(plan: Plan, prlimit: string, uid: number): string[] {
  const { limits, mode } = plan;
  const cpuSeconds = Math.ceil(limits.cpuTimeMs / 1000);
  // V8 reserves ~0.6 GiB of address space before running anything, so Node gets 1 GiB of
  // headroom over the memory limit; its real usage is bounded by --max-old-space-size and, as
  // root, by the memory cgroup.
  const addressSpace =
    plan.language === 'javascript' ? limits.memoryBytes + 1024 * 1024 * 1024 : limits.memoryBytes;
  const ownUid = mode.dropUid ? uid : (process.getuid?.() ?? 0);
  const nproc = limits.processes + (mode.dropUid || ownUid === 0 ? 0 : processCountOf(ownUid));
  return [
    prlimit,
    `--cpu=${cpuSeconds}:${cpuSeconds + 1}`,
    `--as=${addressSpace}`,
    `--fsize=${limits.fileSizeBytes}`,
    `--nofile=${limits.openFiles}`,
    `--nproc=${nproc}`,
    '--core=0',
    '--',
  ];
}

function bwrapArgv(plan: Plan, bwrap: string, harnessFd: number): string[] {
  const argv = [
    bwrap,
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...['--setenv', 'PATH', '/usr/bin:/bin'],
    ...['--setenv', 'HOME', SANDBOX_HOME],
    ...['--setenv', 'TMPDIR', SANDBOX_WORK_DIR],
    ...['--setenv', 'LANG', 'C.UTF-8'],
    ...['--hostname', 'sandbox'],
  ];
  if (plan.mode.dropUid || !isRoot()) argv.push('--unshare-user', '--disable-userns');
  for (const [source, destination] of plan.runtime.binds) {
    argv.push('--ro-bind', source, destination);
  }
  if (plan.language === 'javascript') {
    argv.push('--ro-bind-data', String(harnessFd), SANDBOX_JS_HARNESS);
  }
  argv.push(
    ...['--dev', '/dev'],
    ...['--size', String(plan.limits.diskBytes), '--tmpfs', SANDBOX_WORK_DIR],
    ...['--chdir', SANDBOX_WORK_DIR],
    ...['--remount-ro', '/dev', '--remount-ro', '/'],
  );
  return argv;
}

/**
 * Builds argv for one run: prlimit → [bwrap …] → interpreter. The uid drop is a spawn option and the
 * cgroup join is done by the harness through descriptors (see `execute`), so the chain has no shell
 * or `setpriv` hop. Python runs `-c` (the precompiled harness arrives on stdin, see `PYTHON_BOOT`);
 * sandboxed Node runs the harness as a file that bubblewrap writes into the sandbox from descriptor
 * `harnessFd` (`--ro-bind-data`; a `-e` script costs Node ~8 ms more), unsandboxed Node runs `-e`.
 */
export function buildCommand(
  plan: Plan,
  workDir: string,
  uid: number,
  harnessFd: number,
): string[] {
  return [
    ...(plan.prlimit ? prlimitArgv(plan, plan.prlimit, uid) : []),
    ...(plan.bwrap ? bwrapArgv(plan, plan.bwrap, harnessFd) : []),
    ...interpreterArgv(plan, workDir),
  ];
}

/**
 * The harness's stdin: a header line of space-separated byte lengths, then the UTF-8 fields back to
 * back — nonce, workDir, programFile, program, setup, tests kind (`s` one string | `a` array),
 * readRoots (NUL-separated), the number of cgroup descriptors (fds 4, 5, …), then the tests.
 */
export function payloadFor(
  run: { program: string; tests: string | readonly string[]; setup: string | undefined },
  plan: Plan,
  workDir: string,
  nonce: string,
  cgroup: RunCgroup | null,
): Buffer {
  const { tests } = run;
  const fields = [
    nonce,
    workDir,
    `${workDir}/${plan.language === 'python' ? 'solution.py' : 'solution.js'}`,
    run.program,
    run.setup ?? '',
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
