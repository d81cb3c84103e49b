export type {
  AdvantageBaseline,
  AdvantageScaling,
  GroupAdvantagesOptions,
  GroupAdvantagesResult,
  MultiRewardAggregation,
} from './advantages.js';
export { groupAdvantages } from './advantages.js';
export type { AggregateLossOptions, LossAggregation } from './aggregate-loss.js';
export { aggregateLoss, aggregationWeights, LOSS_AGGREGATIONS } from './aggregate-loss.js';
export type { HighEntropyMaskInput, HighEntropyMaskResult } from './entropy-mask.js';
export { highEntropyMask } from './entropy-mask.js';
export type { FilterDropReason, FilterGroupsOptions, FilterGroupsResult } from './filter-groups.js';
export { filterGroups } from './filter-groups.js';
export type { KlEstimator } from './kl.js';
export { klPenalty } from './kl.js';
export type { LengthBudgetOptions, SoftOverlongOptions } from './length-shaping.js';
export {
  groupLengthPenalty,
  lengthBudgetPenalty,
  maskTruncatedCompletions,
  softOverlongPenalty,
} from './length-shaping.js';
export type {
  MismatchCorrectionInput,
  MismatchCorrectionResult,
  MismatchMetrics,
  MismatchMode,
} from './mismatch.js';
export { MISMATCH_DEFAULTS, mismatchCorrection } from './mismatch.js';
export type { StdKind } from './numeric.js';
export { entropyFromLogits, logSoftmax, logSumExp, softmax } from './numeric.js';
export type { MajAtKOptions } from './pass-at-k.js';
export { majAtK, meanAtN, passAtK } from './pass-at-k.js';
export type {
  LossMode,
  PolicyLossInput,
  PolicyLossMetrics,
  PolicyLossResult,
  RatioLevel,
} from './policy-loss.js';
export { LOSS_MODES, POLICY_LOSS_DEFAULTS, policyLoss } from './policy-loss.js';
