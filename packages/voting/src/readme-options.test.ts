import { staleReadmeTables } from '@rlvr/options/readme';
import { describe, expect, it } from 'vitest';
import { ALLOCATE_VOTES_OPTIONS } from './allocation/allocate.js';
import { TRACE_CONFIDENCE_OPTIONS } from './confidence/confidence.js';
import { CONFIDENCE_VOTE_OPTIONS } from './confidence/confidence-vote.js';
import { DEEPCONF_ONLINE_OPTIONS } from './confidence/deepconf-online.js';
import { ESTIMATOR_OPTIONS } from './estimators/curves.js';
import { ADAPTIVE_VOTE_OPTIONS, VOTE_OPTIONS } from './sampling/sampled-vote.js';
import { DIRICHLET_STOP_OPTIONS } from './sampling/stopping.js';
import { MAJORITY_VOTE_OPTIONS } from './vote/majority-vote.js';
import { SCORED_VOTE_OPTIONS } from './vote/scored.js';

const README = new URL('../README.md', import.meta.url);

describe('README options tables', () => {
  it('should be the tables generated from the options schemas', () => {
    const tables = {
      majorityVote: MAJORITY_VOTE_OPTIONS.schema,
      traceConfidence: TRACE_CONFIDENCE_OPTIONS.schema,
      confidenceVote: CONFIDENCE_VOTE_OPTIONS.schema,
      vote: VOTE_OPTIONS.schema,
      adaptiveVote: ADAPTIVE_VOTE_OPTIONS.schema,
      deepConfOnline: DEEPCONF_ONLINE_OPTIONS.schema,
      allocateVotes: ALLOCATE_VOTES_OPTIONS.schema,
      scoredVote: SCORED_VOTE_OPTIONS.schema,
      accuracyCurve: ESTIMATOR_OPTIONS.schema,
      dirichletStopProbability: DIRICHLET_STOP_OPTIONS.schema,
    };
    expect(
      staleReadmeTables(README, tables),
      'run UPDATE_OPTIONS_TABLES=1 npx vitest run src/readme-options.test.ts',
    ).toEqual([]);
  });
});
