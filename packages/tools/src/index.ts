export { type CalculatorInput, createCalculatorTool } from './calculator.js';
export type { ToolCallLimits, ToolCallOutcome } from './run-tool-call.js';
export {
  createSandboxWorkspace,
  type PythonToolInput,
  type SandboxWorkspace,
  type SandboxWorkspaceOptions,
} from './sandbox-workspace.js';
export {
  createToolEnvironment,
  type ToolEnvironmentOptions,
  type ToolEpisode,
  type ToolSession,
} from './tool-environment.js';
export { ToolFault } from './tool-fault.js';
export { VERSION } from './version.js';
