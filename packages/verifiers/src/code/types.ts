/** Languages the sandbox runs. Python is the system `python3`; JavaScript is the running Node. */
export type CodeLanguage = 'python' | 'javascript';

/**
 * Outcome of one sandboxed run:
 * - `pass`: the harness reported every test passed (with its secret nonce);
 * - `fail`: a test failed, or the program ended before the harness could report (e.g. `exit(0)`);
 * - `error`: the program or a test raised a non-assertion exception, or the program does not compile;
 * - `timeout`: wall-clock or CPU limit reached; `memory`: memory limit reached;
 * - `output-limit`: stdout/stderr exceeded the cap; `blocked`: a sandbox violation was detected.
 */
export type SandboxVerdict =
  | 'pass'
  | 'fail'
  | 'error'
  | 'timeout'
  | 'memory'
  | 'output-limit'
  | 'blocked';

/** Kinds of detected exploit attempts. `tamper`: harness tampering or introspection. */
export type ViolationKind = 'file-read' | 'file-write' | 'process' | 'network' | 'tamper';

/** One detected exploit attempt. */
export type SandboxViolation = { kind: ViolationKind; detail: string };

/** Resource limits of one run. Every field is optional; defaults are in {@link DEFAULT_SANDBOX_LIMITS}. */
export type SandboxLimits = {
  /** Wall-clock limit for the whole run (start-up included), in ms. */
  wallTimeMs?: number;
  /** CPU-time limit (RLIMIT_CPU, rounded up to whole seconds), in ms. */
  cpuTimeMs?: number;
  /** Address-space limit (RLIMIT_AS) and, where cgroups are usable, the memory cgroup limit. */
  memoryBytes?: number;
  /** Cap on captured stdout and on captured stderr (each); exceeding it kills the run. */
  outputBytes?: number;
  /** Largest file the program may write (RLIMIT_FSIZE). */
  fileSizeBytes?: number;
  /** Size of the private work directory (a tmpfs). */
  diskBytes?: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  openFiles?: number;
  /** Processes and threads (RLIMIT_NPROC for the sandbox user, `pids.max` where cgroups work). */
  processes?: number;
};

/** Per-test outcome reported by the harness. */
export type TestOutcome = {
  index: number;
  status: 'pass' | 'fail' | 'error' | 'memory';
  /** Exception type and message (first 300 characters), empty on pass. */
  message: string;
};

/** Which isolation layers were in effect for a run. */
export type IsolationReport = {
  /** `bubblewrap` (namespaces + mounts) or `none` (the caller opted in to unsafe mode). */
  mode: 'bubblewrap' | 'none';
  /** The program ran as an unprivileged throw-away uid (host runs as root). */
  droppedUid: boolean;
  /** Per-run cgroup (pids + memory) was created. */
  cgroup: boolean;
  /** Interpreter binary used. */
  interpreter: string;
  /** bubblewrap binary used (null in unsafe mode). */
  bwrap: string | null;
  /** prlimit binary used (null when missing and `allowWeakerLimits` let the run go on). */
  prlimit: string | null;
  /**
   * Which limits were enforced: `cpuTimeMs`, `fileSizeBytes`, `openFiles` need prlimit;
   * `memoryBytes` and `processes` need prlimit or the cgroup; `diskBytes` needs bubblewrap;
   * `wallTimeMs` and `outputBytes` are enforced by the host and always apply.
   */
  limitsApplied: Record<keyof SandboxLimits, boolean>;
};

/** Structured result of {@link runTests}. Never thrown on model output. */
export type RunTestsResult = {
  verdict: SandboxVerdict;
  /** Tests passed (0 when none ran). */
  passed: number;
  /** Number of countable tests, or `null` when the tests could not be compiled. */
  total: number | null;
  /** Reward: 1 on pass; `passed/total` with `partialCredit` (0 when blocked); else 0. */
  score: number;
  /**
   * Assertions the tests executed (Python `assert` statements and `unittest` assertion methods;
   * JavaScript calls of the tests' `assert`), or `null` when the tests did not run to the end.
   * A suite that ends with 0 ends as `error` (score 0): it cannot tell right from wrong.
   */
  assertions: number | null;
  /** Per-test outcomes, in order, for the tests that finished. */
  tests: TestOutcome[];
  violations: SandboxViolation[];
  /** Human-readable reason for the verdict. */
  reason: string;
  /** Captured stdout/stderr (capped at `limits.outputBytes` each, UTF-8 decoded). */
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  /** `totalMs`: spawn to exit; `queueMs` when run through a pool. */
  timings: Record<string, number>;
  isolation: IsolationReport;
};

/** Options of {@link runTests}. */
export type RunTestsOptions = {
  language: CodeLanguage;
  /** Source of the program under test (e.g. extracted from a completion). */
  program: string;
  /**
   * Hidden tests, non-blank (`''` would pass any program: `INVALID_ARGUMENT`). An array: each entry
   * is one test. A string: in Python every top-level `assert` or expression statement (e.g.
   * `check(candidate)`) is one test and the other statements are setup run in order; in JavaScript
   * the whole string is one test. Tests see the program's top-level names; JavaScript tests get
   * `assert` and `require` parameters. The suite must execute at least one assertion (see
   * {@link RunTestsResult.assertions}).
   */
  tests: string | readonly string[];
  /** Test-side setup run before the tests (hidden from the program too). */
  setup?: string;
  limits?: SandboxLimits;
  /** Score partially: `passed/total` instead of all-or-nothing. Default false. */
  partialCredit?: boolean;
  /**
   * `bubblewrap` (default) refuses to run when bubblewrap is unusable. `unsafe-no-isolation` runs
   * on the host with only rlimits and the in-process guards: for trusted code or debugging only.
   */
  isolation?: 'bubblewrap' | 'unsafe-no-isolation';
  /**
   * Run even where `prlimit` is missing, without the CPU-time, file-size and open-files limits (and
   * without the memory and process limits unless a cgroup applies them);
   * `isolation.limitsApplied` says which held. Default false: a missing prlimit is `UNAVAILABLE`.
   */
  allowWeakerLimits?: boolean;
  /**
   * Python interpreter. Default: the first `python3` on `PATH` that the sandbox user can reach
   * (when the run drops to a throw-away uid, one under e.g. `/root/.pyenv` is skipped).
   */
  pythonPath?: string;
  /** bubblewrap binary. Default: `RLVR_BWRAP` when set, else the first `bwrap` on `PATH`. */
  bwrapPath?: string;
  /** prlimit binary. Default: the first `prlimit` on `PATH`. */
  prlimitPath?: string;
  /** Cancels the run (the process tree is killed and the promise rejects with `ABORTED`). */
  signal?: AbortSignal;
};

/** Default limits: generous for typical test-case programs, small enough to share a machine. */
export const DEFAULT_SANDBOX_LIMITS: Readonly<Required<SandboxLimits>> = Object.freeze({
  wallTimeMs: 10_000,
  cpuTimeMs: 10_000,
  memoryBytes: 1024 * 1024 * 1024,
  outputBytes: 1024 * 1024,
  fileSizeBytes: 16 * 1024 * 1024,
  diskBytes: 64 * 1024 * 1024,
  openFiles: 64,
  processes: 64,
});
