import { type CompletionRecord, filterGroups } from '@rlvr/core';
import type { GrpoStepMetrics } from '../train/trainer-types.js';
import { combinedRewards } from './grpo-advantages.js';
import type { Collected, Group } from './grpo-sampling.js';
import type { TrainOutcome } from './grpo-update.js';
import type { RunContext } from './run-context.js';
import { trajectoryMetrics } from './trajectory-metrics.js';

/** Mean and sample std (0 and 0 for none). @internal */
export function meanStd(values: readonly number[]): { mean: number; std: number } {
  if (values.length === 0) return { mean: 0, std: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance =
    values.length > 1
      ? values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (values.length - 1)
      : 0;
  return { mean, std: Math.sqrt(variance) };
}

function isNumber(value: number | null): value is number {
  return value !== null;
}

/** Reward and length metrics over every (non-aborted) group generated this step. */
function sampleMetrics(run: RunContext, generated: readonly Group[]): Record<string, number> {
  const metrics: Record<string, number> = {};
  const combined = generated.map((group) => combinedRewards(group, run.weights));
  const overall = meanStd(combined.flat().filter(isNumber));
  metrics['reward/mean'] = overall.mean;
  metrics['reward/std'] = overall.std;
  run.columns.forEach((name, column) => {
    const values = generated.flatMap((group) => group.samples.map((s) => s.rewards[column]!));
    const present = values.filter(isNumber);
    const { mean, std } = meanStd(present);
    metrics[`reward/${name}/mean`] = mean;
    metrics[`reward/${name}/std`] = std;
    metrics[`reward/${name}/null_fraction`] =
      values.length > 0 ? 1 - present.length / values.length : 0;
  });
  metrics.frac_reward_zero_std = filterGroups(combined, { minStd: 0 }).fracRewardZeroStd;
  const samples = generated.flatMap((group) => group.samples);
  const lengths = samples.map((sample) => sample.completion.tokenIds.length);
  const clipped = samples.filter((sample) => sample.completion.finishReason === 'length').length;
  metrics['completions/mean_length'] = meanStd(lengths).mean;
  metrics['completions/min_length'] = lengths.length > 0 ? Math.min(...lengths) : 0;
  metrics['completions/max_length'] = lengths.length > 0 ? Math.max(...lengths) : 0;
  metrics['completions/clipped_ratio'] = lengths.length > 0 ? clipped / lengths.length : 0;
  return metrics;
}

/** The mean of `key` over the applied updates (0 when none was applied). */
function meanOver(updates: readonly GrpoStepMetrics[], key: keyof GrpoStepMetrics): number {
  const applied = updates.filter((update) => !update.skipped);
  return applied.length > 0
    ? applied.reduce((sum, update) => sum + (update[key] as number), 0) / applied.length
    : 0;
}

function updateMetrics(updates: readonly GrpoStepMetrics[]): Record<string, number> {
  const applied = updates.filter((update) => !update.skipped);
  const mean = (key: keyof GrpoStepMetrics) => meanOver(updates, key);
  return {
    loss: mean('loss'),
    policy_loss: mean('policyLoss'),
    grad_norm: mean('gradNorm'),
    learning_rate: updates.length > 0 ? updates[updates.length - 1]!.learningRate : 0,
    kl: mean('kl'),
    approx_kl: mean('approxKl'),
    'clip_ratio/low_mean': mean('clipRatioLow'),
    'clip_ratio/high_mean': mean('clipRatioHigh'),
    'clip_ratio/region_mean': mean('clipRatioRegion'),
    clip_fraction: mean('clipFraction'),
    skipped_updates: updates.length - applied.length,
  };
}

/** The human-readable warnings of a step (also sent to `onLog`). */
function diagnosticsOf(
  run: RunContext,
  step: number,
  collected: Collected,
  outcome: TrainOutcome,
  metrics: Record<string, number>,
): string[] {
  const { config } = run;
  const out = [...outcome.diagnostics];
  const add = (condition: boolean, message: string) => {
    if (condition) out.push(message);
  };
  add(
    collected.abortedGroups > 0,
    `${collected.abortedGroups} aborted group(s) (finishReason 'abort') were dropped unscored`,
  );
  add(
    metrics.skipped_updates! > 0,
    `${metrics.skipped_updates} update(s) skipped: non-finite loss, gradients or logprobs (${run.policy.skippedSteps} in total, ${run.policy.consecutiveSkips} in a row; the run stops at ${config.maxConsecutiveSkips})`,
  );
  add(
    collected.nonFiniteRewards > 0,
    `${collected.nonFiniteRewards} non-finite reward value(s) were treated as not applicable (null)`,
  );
  add(
    collected.nonFiniteLogprobs > 0,
    `${collected.nonFiniteLogprobs} group(s) with non-finite sampler logprobs were dropped`,
  );
  add(
    collected.generated.length > 0 && metrics.frac_reward_zero_std === 1,
    'every group has zero reward variance: all advantages are 0, so loss ≈ 0 and no learning signal this step (try dynamicSampling, a larger groupSize, or prompts of fitting difficulty)',
  );
  add(
    step === 1 &&
      config.numIterations === 1 &&
      config.beta === 0 &&
      (config.entropyCoefficient ?? 0) === 0,
    'μ = 1 and β = 0: the reported loss is ≈ 0 by construction (ratio = 1 and group-normalized advantages average to 0); watch reward/mean and grad_norm, not the loss',
  );
  return out;
}

/**
 * The metrics record of a finished step: rewards, lengths, loss/clip/KL averaged over the
 * applied updates, skips, tokens and timings (TRL-style flat names). @internal
 */
export function stepMetrics(
  run: RunContext,
  step: number,
  collected: Collected,
  outcome: TrainOutcome,
  timing: { syncMs: number; started: number },
): { metrics: Record<string, number>; diagnostics: string[] } {
  const metrics: Record<string, number> = {
    ...sampleMetrics(run, collected.generated),
    ...trajectoryMetrics(collected.generated, run.weights),
    'dynamic_sampling/rounds': collected.rounds,
    'dynamic_sampling/generated_groups': collected.generated.length,
    'dynamic_sampling/kept_groups': collected.kept.length,
    ...outcome.metrics,
    ...updateMetrics(outcome.updates),
    // only when the off-policy mask is on (runs without it keep their metric names)
    ...(run.config.offPolicyMaskThreshold === undefined
      ? {}
      : {
          'off_policy_mask/masked_fraction': meanOver(outcome.updates, 'offPolicyMaskedFraction'),
        }),
    optimizer_step: run.policy.step,
    'skipped/over_context': outcome.overContext,
    'skipped/non_finite_rewards': collected.nonFiniteRewards,
    'skipped/non_finite_logprobs_groups': collected.nonFiniteLogprobs,
    'skipped/aborted_groups': collected.abortedGroups,
    'tokens/rollout': collected.generatedTokens,
    'tokens/train': outcome.trainTokens,
    'tokens/loss': outcome.lossTokens,
  };
  const diagnostics = diagnosticsOf(run, step, collected, outcome, metrics);
  for (const [name, value] of [
    ['overContext', outcome.overContext],
    ['nonFiniteRewards', collected.nonFiniteRewards],
    ['nonFiniteLogprobs', collected.nonFiniteLogprobs],
    ['abortedGroups', collected.abortedGroups],
    ['skippedUpdates', metrics.skipped_updates!],
    ['emptySteps', outcome.updates.length === 0 ? 1 : 0],
  ] as const) {
    run.counters[name] = (run.counters[name] ?? 0) + value;
  }
  const { rolloutMs, rewardMs, generatedTokens } = collected;
  Object.assign(metrics, {
    'time/rollout_ms': rolloutMs,
    'time/reward_ms': rewardMs,
    'time/logprob_ms': outcome.logprobMs,
    'time/train_ms': outcome.trainMs,
    'time/weight_sync_ms': timing.syncMs,
    'time/last_checkpoint_ms': run.lastCheckpointMs,
    'tokens_per_second/rollout': rolloutMs > 0 ? (generatedTokens * 1000) / rolloutMs : 0,
    'tokens_per_second/train':
      outcome.trainMs > 0 ? (outcome.trainTokens * 1000) / outcome.trainMs : 0,
    'time/step_ms': performance.now() - timing.started,
  });
  return { metrics, diagnostics };
}

/** One completions-table row per kept sample. @internal */
export function completionRows(
  run: RunContext,
  step: number,
  kept: readonly Group[],
  advantages: readonly number[],
): CompletionRecord[] {
  const rows: CompletionRecord[] = [];
  for (const group of kept) {
    const combined = combinedRewards(group, run.weights);
    group.samples.forEach((sample, index) => {
      rows.push({
        step,
        promptId: group.record.id,
        prompt: group.record.prompt,
        completion: sample.completion.text,
        reward: combined[index] ?? null,
        rewards: Object.fromEntries(run.columns.map((name, c) => [name, sample.rewards[c]!])),
        advantage: advantages[rows.length] ?? 0,
        finishReason: sample.completion.finishReason,
        completionTokens: sample.completion.tokenIds.length,
      });
    });
  }
  return rows;
}
