export type { CompletionRecord, MetricRecord } from './metrics.js';
export type { RewardFunction, RewardInput, WeightedReward } from './reward.js';
export type { Rollout, RolloutGroup } from './rollout.js';
export type { Completion, FinishReason, Prompt, SampleRequest, Sampler } from './sampler.js';
export {
  assertSampler,
  isAbortedGroup,
  SAMPLE_REQUEST_KEYS,
  SUPPORTED_SAMPLER_SPECIFICATIONS,
  throwIfAborted,
} from './sampler.js';
export type { Verifier, VerifyInput, VerifyResult } from './verifier.js';
export type { NamedTensor, WeightSnapshot } from './weights.js';
