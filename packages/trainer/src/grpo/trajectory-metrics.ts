import { TOOL_RESULT_STATUSES, TRAJECTORY_END_REASONS, type Trajectory } from '@rlvr/core';
import { combinedRewards } from './grpo-advantages.js';
import type { Group } from './grpo-sampling.js';
import { isTrajectory } from './grpo-sampling.js';

/**
 * Multi-turn metrics over every trajectory generated this step (none for single-turn runs):
 * `turns/mean|max`, `turns/frac_<k>` and `turns/reward_mean_<k>` per turn count k,
 * `tools/calls_per_trajectory`, `tools/call_success_rate` (ok / all tool results),
 * `tools/status/<status>` (counts, every status), `tools/malformed_calls`,
 * `trajectory/end/<reason>` (fractions), `trajectory/policy_tokens_mean`,
 * `trajectory/environment_tokens_mean`. @internal
 */
export function trajectoryMetrics(
  generated: readonly Group[],
  weights: readonly number[],
): Record<string, number> {
  const rows: { trajectory: Trajectory; reward: number | null }[] = [];
  for (const group of generated) {
    const combined = combinedRewards(group, weights);
    group.samples.forEach((sample, index) => {
      if (isTrajectory(sample.completion)) {
        rows.push({ trajectory: sample.completion, reward: combined[index] ?? null });
      }
    });
  }
  if (rows.length === 0) return {};
  const metrics: Record<string, number> = {};
  const mean = (values: readonly number[]) =>
    values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : 0;
  const turns = rows.map(({ trajectory }) => trajectory.turns.length);
  metrics['turns/mean'] = mean(turns);
  metrics['turns/max'] = Math.max(...turns);
  for (const count of [...new Set(turns)].sort((a, b) => a - b)) {
    const chosen = rows.filter(({ trajectory }) => trajectory.turns.length === count);
    metrics[`turns/frac_${count}`] = chosen.length / rows.length;
    metrics[`turns/reward_mean_${count}`] = mean(
      chosen.flatMap(({ reward }) => (reward === null ? [] : [reward])),
    );
  }
  const results = rows.flatMap(({ trajectory }) =>
    trajectory.turns.flatMap((turn) => turn.toolResults),
  );
  const calls = rows.map(({ trajectory }) =>
    trajectory.turns.reduce((sum, turn) => sum + turn.toolCalls + turn.malformedToolCalls, 0),
  );
  metrics['tools/calls_per_trajectory'] = mean(calls);
  metrics['tools/call_success_rate'] =
    results.length > 0
      ? results.filter((result) => result.status === 'ok').length / results.length
      : 0;
  for (const status of TOOL_RESULT_STATUSES) {
    metrics[`tools/status/${status}`] = results.filter((result) => result.status === status).length;
  }
  metrics['tools/malformed_calls'] = rows.reduce(
    (sum, { trajectory }) =>
      sum + trajectory.turns.reduce((acc, turn) => acc + turn.malformedToolCalls, 0),
    0,
  );
  for (const reason of TRAJECTORY_END_REASONS) {
    metrics[`trajectory/end/${reason}`] =
      rows.filter(({ trajectory }) => trajectory.endReason === reason).length / rows.length;
  }
  const policy = rows.map(({ trajectory }) => trajectory.policyMask.reduce((a, b) => a + b, 0));
  metrics['trajectory/policy_tokens_mean'] = mean(policy);
  metrics['trajectory/environment_tokens_mean'] = mean(
    rows.map(({ trajectory }, index) => trajectory.tokenIds.length - policy[index]!),
  );
  return metrics;
}
