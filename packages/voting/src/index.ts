export { majAtK, meanAtN, passAtK } from '@rlvr/core';
export type {
  AllocateVotesOptions,
  AllocateVotesResult,
  AllocationPolicy,
  AllocationState,
} from './allocation/allocate.js';
export {
  ALLOCATE_VOTES_DEFAULTS,
  ALLOCATE_VOTES_OPTIONS,
  ALLOCATION_POLICY_OPTIONS,
  allocateVotes,
  planAllocationRound,
} from './allocation/allocate.js';
export type { VoteRecord } from './cli/run-cli.js';
export { parseRecords } from './cli/run-cli.js';
export type { ConfidenceMeasure, TraceConfidenceOptions } from './confidence/confidence.js';
export {
  CONFIDENCE_DEFAULTS,
  CONFIDENCE_FIELDS,
  groupConfidences,
  TRACE_CONFIDENCE_OPTIONS,
  tokenConfidences,
  traceConfidence,
} from './confidence/confidence.js';
export type {
  ConfidenceTrace,
  ConfidenceVoteOptions,
  ConfidenceVoteResult,
  ConfidenceWeighting,
} from './confidence/confidence-vote.js';
export { CONFIDENCE_VOTE_OPTIONS, confidenceVote } from './confidence/confidence-vote.js';
export type {
  DeepConfOnlineOptions,
  DeepConfOnlineResult,
  DeepConfStopReason,
} from './confidence/deepconf-online.js';
export {
  DEEPCONF_ONLINE_DEFAULTS,
  DEEPCONF_ONLINE_OPTIONS,
  deepConfOnline,
} from './confidence/deepconf-online.js';
export type { CurvePoint, EstimatorOptions } from './estimators/curves.js';
export {
  accuracyCurve,
  defaultKs,
  ESTIMATOR_OPTIONS,
  MAJ_AT_K_OPTIONS,
  majAtKFromAnswers,
  meanAccuracyCurve,
} from './estimators/curves.js';
export type {
  AdaptiveVoteOptions,
  SampledVoteResult,
  SamplingOptions,
  StopReason,
  StopStrategy,
  VoteOptions,
} from './sampling/sampled-vote.js';
export {
  ADAPTIVE_VOTE_OPTIONS,
  adaptiveVote,
  SAMPLING_SCHEMA,
  VOTE_OPTIONS,
  vote,
} from './sampling/sampled-vote.js';
export {
  betaStopProbability,
  DIRICHLET_STOP_OPTIONS,
  dirichletStopProbability,
} from './sampling/stopping.js';
export { VERSION } from './version.js';
export { defaultEquals, defaultExtract } from './vote/defaults.js';
export type { MajorityVoteOptions } from './vote/majority-vote.js';
export {
  MAJORITY_VOTE_DEFAULTS,
  MAJORITY_VOTE_OPTIONS,
  majorityVote,
} from './vote/majority-vote.js';
export type { BestOfNOptions, BestOfNResult, ScoredVoteOptions, Scorer } from './vote/scored.js';
export { BEST_OF_N_OPTIONS, bestOfN, SCORED_VOTE_OPTIONS, scoredVote } from './vote/scored.js';
export type {
  EqualsFn,
  ExtractFn,
  VoteCluster,
  VoteResult,
  VoteSample,
  Weighting,
} from './vote/types.js';
