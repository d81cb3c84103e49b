export { QueueJobFailedError } from './errors/queue-job-failed-error.js';
export {
  QueueUnavailableError,
  type QueueUnavailableReason,
} from './errors/queue-unavailable-error.js';
export {
  DEFAULT_ROLLOUT_QUEUE,
  DEFAULT_VERIFY_QUEUE,
  groupSeed,
  type JobPer,
  type JobSampling,
  jobSeed,
  type PolicyPointer,
  policyKey,
  type RolloutJobData,
  rolloutJobId,
  type VerifyJobData,
  type VerifyJobResult,
  type VersionedCompletion,
  verifyJobId,
} from './protocol.js';
export { checkRedis, connectRedis, DEFAULT_REDIS_URL } from './redis/connection.js';
export {
  createQueueReward,
  type QueueReward,
  type QueueRewardOptions,
} from './reward/queue-reward.js';
export {
  createQueueSampler,
  type QueueSampler,
  type QueueSamplerOptions,
} from './sampler/queue-sampler.js';
export {
  assembleGroups,
  createPerJobSampler,
  type PlannedJob,
  planRolloutJobs,
  runRolloutJob,
} from './sampler/run-job.js';
export { VERSION } from './version.js';
export { createLocalWeightStore, sha256, type WeightStore } from './weights/weight-store.js';
