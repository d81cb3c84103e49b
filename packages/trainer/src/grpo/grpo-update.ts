import { maskTruncatedCompletions, mismatchCorrection, throwIfAborted } from '@rlvr/core';
import type { TokenSequence } from '../batch/token-batch.js';
import type { GrpoStepMetrics } from '../train/trainer-types.js';
import { meanStd } from './grpo-metrics.js';
import { type Group, isTrajectory, type Sample } from './grpo-sampling.js';
import type { RunContext } from './run-context.js';

/** What the training phase of a step did. @internal */
export type TrainOutcome = {
  /** One entry per optimizer step (empty when nothing was trained on). */
  updates: GrpoStepMetrics[];
  /** `mismatch/*` and `entropy` (absent when the trainer's logprobs were not finite). */
  metrics: Record<string, number>;
  diagnostics: string[];
  overContext: number;
  trainTokens: number;
  lossTokens: number;
  logprobMs: number;
  trainMs: number;
};

function emptyOutcome(overContext: number, diagnostics: string[]): TrainOutcome {
  return {
    updates: [],
    metrics: {},
    diagnostics,
    overContext,
    trainTokens: 0,
    lossTokens: 0,
    logprobMs: 0,
    trainMs: 0,
  };
}

/** Rollout↔trainer metrics: trainer logprobs at the sampling temperature vs behaviour logprobs. */
function mismatchMetrics(trainer: number[][], behaviour: number[][]): Record<string, number> {
  const mismatch = mismatchCorrection({
    trainerLogprobs: trainer,
    behaviourLogprobs: behaviour,
    mode: 'token-truncate',
    cap: Number.MAX_VALUE,
  }).metrics;
  return {
    'mismatch/mean_abs_logprob_diff': mismatch.meanAbsLogprobDiff,
    'mismatch/max_abs_logprob_diff': mismatch.maxAbsLogprobDiff,
    'mismatch/is_ratio_mean': mismatch.isRatioMean,
    'mismatch/is_ratio_min': mismatch.isRatioMin,
    'mismatch/is_ratio_max': mismatch.isRatioMax,
  };
}

function entropyDiagnostic(run: RunContext, entropy: number): string | undefined {
  if (run.initialEntropy === null) {
    run.initialEntropy = entropy;
    return undefined;
  }
  if (run.initialEntropy > 0 && entropy < run.config.entropyCollapseRatio * run.initialEntropy) {
    return `entropy is collapsing: ${entropy.toFixed(4)} nats vs ${run.initialEntropy.toFixed(4)} at the first step; lower the learning rate, raise the temperature, use clip-higher (epsilonHigh) or an entropy bonus`;
  }
  return undefined;
}

/**
 * The training phase of a step: leaves out completions longer than the context, masks truncated
 * ones when asked, measures the rollout↔trainer mismatch and the entropy (trainer logprobs at the
 * sampling temperature vs the sampler's behaviour logprobs `completion.logprobs`), checks
 * `signal` one last time, then runs one `grpoStep`: the point after which the step is committed.
 * @internal
 */
export function trainOnGroups(
  run: RunContext,
  kept: readonly Group[],
  advantages: readonly number[],
  signal: AbortSignal | undefined,
): TrainOutcome {
  const { config, policy } = run;
  const contextLimit = run.model.config.max_position_embeddings;
  const chosen: { sample: Sample; advantage: number }[] = [];
  let overContext = 0;
  kept
    .flatMap((group) => group.samples)
    .forEach((sample, index) => {
      if (sample.promptIds.length + sample.completion.tokenIds.length > contextLimit) {
        overContext += 1;
      } else {
        chosen.push({ sample, advantage: advantages[index]! });
      }
    });
  const diagnostics: string[] = [];
  if (overContext > 0) {
    diagnostics.push(
      `${overContext} completion(s) longer than the context (${contextLimit} tokens) were skipped`,
    );
  }
  if (chosen.length === 0) {
    diagnostics.push(
      'no group left to train on (every group had zero reward variance or was skipped): no update this step',
    );
    throwIfAborted(signal, 'GrpoTrainer.step()');
    return emptyOutcome(overContext, diagnostics);
  }
  const sequences: TokenSequence[] = chosen.map(({ sample }) => ({
    promptIds: sample.promptIds,
    completionIds: sample.completion.tokenIds,
  }));
  const behaviourLogprobs = chosen.map(({ sample }) => sample.completion.logprobs);
  // multi-turn: the loss covers the policy's tokens only (environment tokens are masked)
  let mask = chosen.map(({ sample }) =>
    isTrajectory(sample.completion)
      ? [...sample.completion.policyMask]
      : new Array<number>(sample.completion.tokenIds.length).fill(1),
  );
  if (config.maskTruncatedCompletions) {
    mask = maskTruncatedCompletions(
      mask,
      chosen.map(({ sample }) => sample.completion.finishReason),
    );
  }
  const policyOnly = (rows: readonly (readonly number[])[]) =>
    rows.map((row, index) => {
      const completion = chosen[index]!.sample.completion;
      return isTrajectory(completion)
        ? row.filter((_, at) => completion.policyMask[at] === 1)
        : [...row];
    });
  const logprobStarted = performance.now();
  const current = policy.completionLogprobs(sequences, { temperature: config.temperature });
  const logprobMs = performance.now() - logprobStarted;
  const metrics: Record<string, number> = {};
  if (current.finite) {
    Object.assign(
      metrics,
      mismatchMetrics(policyOnly(current.logprobs), policyOnly(behaviourLogprobs)),
    );
    metrics.entropy = meanStd(policyOnly(current.entropies).flat()).mean;
  } else {
    diagnostics.push(
      "the trainer's logprobs are not finite (NaN/Inf weights or logits): no mismatch or entropy metrics this step",
    );
  }
  throwIfAborted(signal, 'GrpoTrainer.step()');
  // environment tokens were not sampled: their "behaviour" logprob is the trainer's own (ratio
  // 1), so no importance weight or sequence-level ratio depends on them (they are masked anyway)
  const stepBehaviour = behaviourLogprobs.map((row, index) => {
    const completion = chosen[index]!.sample.completion;
    if (!isTrajectory(completion) || !current.finite) return row;
    return row.map((value, at) =>
      completion.policyMask[at] === 1 ? value : current.logprobs[index]![at]!,
    );
  });
  const trainStarted = performance.now();
  const result = policy.grpoStep(
    {
      sequences,
      advantages: chosen.map(({ advantage }) => advantage),
      mask,
      behaviourLogprobs: stepBehaviour,
    },
    {
      numIterations: config.numIterations,
      ...(config.miniBatchSize === undefined ? {} : { miniBatchSize: config.miniBatchSize }),
    },
  );
  const trainMs = performance.now() - trainStarted;
  if (metrics.entropy !== undefined) {
    const warning = entropyDiagnostic(run, metrics.entropy);
    if (warning) diagnostics.push(warning);
  }
  return {
    updates: result.steps,
    metrics,
    diagnostics,
    overContext,
    trainTokens:
      sequences.reduce((sum, s) => sum + s.promptIds.length + s.completionIds.length, 0) *
      config.numIterations,
    lossTokens: mask.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0), 0),
    logprobMs,
    trainMs,
  };
}
