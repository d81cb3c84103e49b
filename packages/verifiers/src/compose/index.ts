export type {
  CombinedReward,
  CombinedScore,
  CombineRewardsOptions,
  RewardMetrics,
} from './combine-rewards.js';
export { combineRewards } from './combine-rewards.js';
export type { LengthPenaltyOptions, RepetitionPenaltyOptions } from './penalties.js';
export { lengthPenaltyReward, repetitionPenaltyReward, verifierReward } from './penalties.js';
