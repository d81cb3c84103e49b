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
export type { Verifier, VerifyInput, VerifyResult } from './verifier.js';
export type { NamedTensor, WeightSnapshot } from './weights.js';
