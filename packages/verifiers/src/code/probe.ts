import { ErrorCode, RlvrError } from '@rlvr/core';
import { createRunCgroup } from './cgroup.js';
import {
  buildCommand,
  harnessDataFor,
  harnessFdAfter,
  type Mode,
  type Plan,
  payloadFor,
  randomNonce,
  randomSandboxUid,
  SANDBOX_WORK_DIR,
} from './command.js';
import { execute, type Outcome } from './execute.js';
import { canDropUid } from './host-tools.js';
import type { RuntimeInfo } from './runtime.js';
import { type CodeLanguage, DEFAULT_SANDBOX_LIMITS } from './types.js';

const probes = new Map<string, Promise<Mode>>();

/** Runs the trivial program of the probe with `mode`; returns null when it passed, else why not. */
async function tryMode(
  language: CodeLanguage,
  runtime: RuntimeInfo,
  tools: { bwrap: string; prlimit: string | null },
  mode: Mode,
): Promise<string | null> {
  const limits = DEFAULT_SANDBOX_LIMITS;
  const cgroup = mode.cgroup ? createRunCgroup(limits) : null;
  if (mode.cgroup && !cgroup) return 'no usable cgroups';
  const plan: Plan = { language, runtime, limits, mode, ...tools };
  const program = language === 'python' ? 'x = 1' : 'const x = 1;';
  const tests = language === 'python' ? ['assert x == 1'] : ['assert.strictEqual(x, 1);'];
  const uid = randomSandboxUid();
  const nonce = randomNonce();
  let outcome: Outcome;
  try {
    outcome = await execute(
      buildCommand(plan, SANDBOX_WORK_DIR, uid, harnessFdAfter(cgroup)),
      payloadFor({ program, tests, setup: undefined }, plan, SANDBOX_WORK_DIR, nonce, cgroup),
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
  if (outcome.summary && outcome.summary.passed === 1) return null;
  const detail =
    outcome.loadFailure?.message ||
    outcome.stderr.slice(0, 300).trim() ||
    `exit ${outcome.exitCode}`;
  return (
    `${mode.dropUid ? 'as an unprivileged uid' : 'as the current user'}` +
    `${cgroup ? ' in a cgroup' : ''}: ${detail}`
  );
}

/**
 * Runs a trivial program through the full start-up once per interpreter and tool set, to see which
 * mode works here: as root, an unprivileged uid with a cgroup first, then without the cgroup (e.g. a
 * cgroup v2 kernel older than 5.16 checks the writer's, not the opener's, credentials), then as the
 * current user.
 */
export function probeMode(
  language: CodeLanguage,
  runtime: RuntimeInfo,
  tools: { bwrap: string; prlimit: string | null },
  functionName: string,
): Promise<Mode> {
  const key = `${language}:${runtime.executable}:${tools.bwrap}:${tools.prlimit}`;
  let found = probes.get(key);
  if (!found) {
    found = (async () => {
      const failures: string[] = [];
      for (const dropUid of canDropUid() ? [true, false] : [false]) {
        for (const cgroup of [true, false]) {
          const mode = { dropUid, cgroup };
          const failure = await tryMode(language, runtime, tools, mode);
          if (failure === null) return mode;
          if (failure !== 'no usable cgroups') failures.push(failure);
        }
      }
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        `${functionName}(): bubblewrap is installed but cannot create a sandbox here ` +
          `(${failures.join('; ')}). Allow unprivileged user namespaces, or pass ` +
          "`isolation: 'unsafe-no-isolation'`.",
      );
    })();
    probes.set(key, found);
    found.catch(() => probes.delete(key));
  }
  return found;
}
