export type { CodeRewardOptions, CodeTaskAnswer } from './code-reward.js';
export { createCodeReward } from './code-reward.js';
export type { ExtractCodeOptions } from './extract-code.js';
export { extractCode } from './extract-code.js';
export type { SandboxPool, SandboxPoolOptions } from './pool.js';
export { createSandboxPool } from './pool.js';
export { runTests } from './run-tests.js';
export type {
  CodeLanguage,
  IsolationReport,
  RunTestsOptions,
  RunTestsResult,
  SandboxLimits,
  SandboxVerdict,
  SandboxViolation,
  TestOutcome,
  ViolationKind,
} from './types.js';
export { DEFAULT_SANDBOX_LIMITS } from './types.js';
export type {
  RunInWorkspaceOptions,
  WorkspaceRunResult,
  WorkspaceRunStatus,
} from './workspace-run.js';
export { runInWorkspace } from './workspace-run.js';
