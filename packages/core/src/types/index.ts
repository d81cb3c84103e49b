export type {
  AssistantTurn,
  ChatMessage,
  Environment,
  EnvironmentFactory,
  EnvironmentInput,
  EnvironmentReset,
  EnvironmentStep,
  JsonSchema,
  MalformedToolCall,
  ToolCall,
  ToolDefinition,
  ToolExecutionContext,
  ToolResultRecord,
  ToolResultStatus,
  ToolSpec,
  TurnFinishReason,
} from './environment.js';
export {
  assertEnvironment,
  CHAT_ROLES,
  TOOL_RESULT_STATUSES,
  validateEnvironmentReset,
  validateEnvironmentStep,
} from './environment.js';
export type { CompletionRecord, MetricRecord } from './metrics.js';
export type { RewardFunction, RewardInput, WeightedReward } from './reward.js';
export type { Rollout, RolloutGroup } from './rollout.js';
export type {
  Completion,
  ConfidenceStop,
  FinishReason,
  Prompt,
  SampleRequest,
  Sampler,
  TopLogprob,
} from './sampler.js';
export {
  assertSampler,
  CONFIDENCE_STOP_KEYS,
  FINISH_REASONS,
  isAbortedGroup,
  SAMPLE_REQUEST_DEFAULTS,
  SAMPLE_REQUEST_KEYS,
  SUPPORTED_SAMPLER_SPECIFICATIONS,
  throwIfAborted,
  validateConfidenceRequest,
} from './sampler.js';
export type {
  MultiTurnSampler,
  Trajectory,
  TrajectoryEndReason,
  TrajectoryPrompt,
  TrajectoryRequest,
  TrajectoryTurn,
} from './trajectory.js';
export {
  isMultiTurnSampler,
  TRAJECTORY_END_REASONS,
  TRAJECTORY_REQUEST_KEYS,
  validateTrajectory,
  validateTrajectoryRequest,
} from './trajectory.js';
export type { Verifier, VerifyInput, VerifyResult } from './verifier.js';
export type { NamedTensor, WeightSnapshot } from './weights.js';
