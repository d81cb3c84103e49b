import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbortedError, ErrorCode, RlvrError } from '@rlvr/core';
import { createRunCgroup } from './cgroup.js';
import {
  buildCommand,
  harnessDataFor,
  harnessFdAfter,
  limitsApplied,
  type Mode,
  type Plan,
  payloadFor,
  randomNonce,
  randomSandboxUid,
  SANDBOX_WORK_DIR,
} from './command.js';
import { execute, type Outcome } from './execute.js';
import { assertLinux, type HostTools, resolveHostTools } from './host-tools.js';
import { type ValidatedRunTestsOptions, validateRunTestsOptions } from './options.js';
import { probeMode } from './probe.js';
import { defaultPythonPath, discoverRuntime, type RuntimeInfo } from './runtime.js';
import type { RunTestsOptions, RunTestsResult } from './types.js';
import { decide } from './verdict.js';

export { rejectPythonPathForJavaScript, resolveLimits } from './options.js';

const FN = 'runTests';

/** Finds and starts the interpreter once (cached), or UNAVAILABLE saying what is missing. */
async function runtimeFor(input: ValidatedRunTestsOptions): Promise<RuntimeInfo> {
  const interpreter =
    input.language === 'python' ? (input.pythonPath ?? defaultPythonPath()) : process.execPath;
  if (!interpreter) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `${FN}(): no python3 interpreter on PATH that the sandbox user can reach; install one or ` +
        'pass `pythonPath`.',
    );
  }
  try {
    return await discoverRuntime(input.language, interpreter);
  } catch (cause) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `${FN}(): cannot start the ${input.language} interpreter '${interpreter}'`,
      { cause },
    );
  }
}

/** The tools this run uses: refuses a missing bwrap (sandboxed) or prlimit (unless allowed). */
function checkTools(input: ValidatedRunTestsOptions, tools: HostTools): void {
  if (input.isolation === 'bubblewrap' && !tools.bwrap.path) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `${FN}() needs bubblewrap (\`bwrap\`) for isolation, and ${tools.bwrap.missing}. Install it ` +
        '(Debian/Ubuntu: `apt-get install bubblewrap`), pin it with `bwrapPath`, or pass ' +
        "`isolation: 'unsafe-no-isolation'` to run untrusted code on the host without a sandbox.",
    );
  }
  if (!tools.prlimit.path && !input.allowWeakerLimits) {
    throw new RlvrError(
      ErrorCode.UNAVAILABLE,
      `${FN}() needs \`prlimit\` (util-linux) to apply the CPU-time, memory, file-size, ` +
        `open-files and process limits, and ${tools.prlimit.missing}. Install util-linux, pin it ` +
        'with `prlimitPath`, or pass `allowWeakerLimits: true` to run without those limits ' +
        '(`isolation.limitsApplied` then says which limits held).',
    );
  }
}

/** Builds the public result from one run's outcome. */
function resultOf(
  input: ValidatedRunTestsOptions,
  plan: Plan,
  outcome: Outcome,
  cgroup: { created: boolean; oomKills: number },
): RunTestsResult {
  const { verdict, reason } = decide(outcome, cgroup.oomKills, input.language);
  const total = outcome.summary?.total ?? outcome.total;
  const passed = outcome.tests.filter((test) => test.status === 'pass').length;
  // A suite that executed no assertion earns nothing, not even partial credit.
  const vacuous = outcome.summary?.assertions === 0;
  let score = 0;
  if (verdict === 'pass') score = 1;
  else if (verdict !== 'blocked' && !vacuous && input.partialCredit && total) {
    score = passed / total;
  }
  return {
    verdict,
    passed,
    total,
    score,
    assertions: outcome.summary?.assertions ?? null,
    tests: outcome.tests,
    violations: outcome.violations,
    reason,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    timings: { totalMs: outcome.totalMs },
    isolation: {
      mode: plan.bwrap ? 'bubblewrap' : 'none',
      droppedUid: plan.mode.dropUid,
      cgroup: cgroup.created,
      interpreter: plan.runtime.executable,
      bwrap: plan.bwrap,
      prlimit: plan.prlimit,
      limitsApplied: limitsApplied(plan, cgroup.created),
    },
  };
}

/**
 * Runs a program against hidden tests in a deny-by-default sandbox and returns a structured verdict.
 * Never throws on the program's behaviour (syntax errors, crashes, exploits all become verdicts);
 * throws only on invalid options (empty tests included), when the host cannot sandbox (code
 * `UNAVAILABLE`: not Linux, bubblewrap missing or unusable unless `isolation:
 * 'unsafe-no-isolation'`, prlimit missing unless `allowWeakerLimits`), or when aborted (`ABORTED`).
 *
 * Isolation (details in `docs/code-sandbox.md`): bubblewrap with every namespace unshared (no
 * network, own PID namespace), a size-capped private tmpfs work dir, read-only binds of only the
 * interpreter, its libraries and (Python) its stdlib; rlimits (CPU, address space, file size, open
 * files, processes) via `prlimit`; an unprivileged throw-away uid and a pids+memory cgroup when the
 * host runs as root; wall-clock timeout killing the whole tree; capped stdout/stderr. The harness
 * keeps the tests hidden, reports results with a secret nonce only it knows, and reports exploit
 * attempts (Python audit hooks; a guarded `require` in Node) even when the program swallows the
 * resulting error: any violation makes the verdict `blocked`. Tools (`bwrap`, `prlimit`,
 * `python3`) come from `PATH` unless pinned (`bwrapPath`, `prlimitPath`, `pythonPath`).
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
 * @throws {RlvrError} `UNAVAILABLE` when the host cannot run the sandbox (see above).
 * @throws {AbortedError} `ABORTED` when `signal` aborts the run.
 */
export async function runTests(options: RunTestsOptions): Promise<RunTestsResult> {
  const input = validateRunTestsOptions(options, FN);
  if (input.signal?.aborted) {
    throw new AbortedError({ operation: 'runTests()', cause: input.signal.reason });
  }
  assertLinux(FN);
  const tools = resolveHostTools(input);
  checkTools(input, tools);
  const runtime = await runtimeFor(input);
  const bwrap = input.isolation === 'bubblewrap' ? tools.bwrap.path : null;
  const prlimit = tools.prlimit.path;
  const mode: Mode = bwrap
    ? await probeMode(input.language, runtime, { bwrap, prlimit }, FN)
    : { dropUid: false, cgroup: false };
  const plan: Plan = {
    language: input.language,
    runtime,
    limits: input.limits,
    mode,
    bwrap,
    prlimit,
  };
  const { limits } = input;
  const hostWorkDir = bwrap ? undefined : mkdtempSync(join(tmpdir(), 'rlvr-work-'));
  const workDir = hostWorkDir ?? SANDBOX_WORK_DIR;
  const cgroup = mode.cgroup
    ? createRunCgroup({ processes: limits.processes, memoryBytes: limits.memoryBytes })
    : null;
  const uid = randomSandboxUid();
  const nonce = randomNonce();
  try {
    const outcome = await execute(
      buildCommand(plan, workDir, uid, harnessFdAfter(cgroup)),
      payloadFor(input, plan, workDir, nonce, cgroup),
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
    return resultOf(input, plan, outcome, {
      created: cgroup !== null,
      oomKills: cgroup?.oomKills() ?? 0,
    });
  } finally {
    cgroup?.dispose();
    if (hostWorkDir) rmSync(hostWorkDir, { recursive: true, force: true });
  }
}
