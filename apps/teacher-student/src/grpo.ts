import { type Completion, createRng, filterGroups, groupAdvantages } from '@rlvr/core';
import { type Checkpoint, createTokenizer } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer, type TokenSequence } from '@rlvr/trainer';
import type { GrpoConfig } from './config.js';
import type { PhaseProgress } from './progress.js';
import { correctness, r1Format } from './rewards.js';
import { createSampler, type Runtime } from './runtime.js';
import type { ModArithProblem } from './task.js';

/** Metrics of one GRPO step (the report's RL curves). */
export type GrpoStepRecord = {
  step: number;
  /** Wall time since the phase started, ms. */
  elapsedMs: number;
  /** Mean combined reward (correctness + formatWeight · format) of the first sampling round. */
  reward: number;
  /** Fraction of correct completions in the first round (training prompts). */
  accuracy: number;
  /** Fraction of completions in the R1 format. */
  formatRate: number;
  /** Mean completion length in tokens. */
  meanLength: number;
  /** Fraction of first-round groups whose rewards all agree (no signal): `frac_reward_zero_std`. */
  fracZeroStd: number;
  /** Sampling rounds taken by dynamic sampling. */
  rounds: number;
  /** Groups trained on after filtering. */
  keptGroups: number;
  loss: number;
  /** k3 KL to the warm-start (reference) policy. */
  kl: number;
  /** Mean token entropy of the policy, nats. */
  entropy: number;
  clipFraction: number;
  gradNorm: number;
  /** Greedy accuracy on held-out prompts (only on evaluation steps). */
  heldOutAccuracy?: number;
};

/** Result of {@link runGrpo}. */
export type GrpoResult = {
  checkpoint: Checkpoint;
  history: GrpoStepRecord[];
  /** Held-out greedy accuracy before the first step. */
  initialHeldOutAccuracy: number;
  steps: number;
  sampledCompletions: number;
  timeMs: number;
  /** Why the loop ended. */
  stoppedBecause: 'steps' | 'time-budget';
};

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

/** Greedy accuracy of a sampler on problems. */
async function greedyAccuracy(
  sampler: Awaited<ReturnType<typeof createSampler>>,
  problems: readonly ModArithProblem[],
  maxNewTokens: number,
): Promise<number> {
  const groups = await sampler.sample({
    prompts: problems.map((problem) => problem.prompt),
    n: 1,
    maxNewTokens,
    temperature: 0,
  });
  return mean(groups.map((group, index) => correctness(group[0]!.text, problems[index]!.answer)));
}

/**
 * GRPO with @rlvr/rollout as the sampler, the task verifiers as rewards (correctness + R1 format),
 * DAPO-style dynamic sampling (zero-variance groups are dropped and replaced by fresh prompts, up to
 * `maxResampleRounds` extra rounds), truncated completions optionally masked out
 * (`maskTruncated`), clip-higher, the configured loss aggregation and a k3 KL penalty to the
 * starting policy. Runs `config.steps` steps, or until
 * `budgetMs` of wall time is spent when given.
 */
export async function runGrpo(options: {
  runtime: Runtime;
  checkpoint: Checkpoint;
  train: readonly ModArithProblem[];
  heldOut: readonly ModArithProblem[];
  config: GrpoConfig;
  maxNewTokens: number;
  seed: number;
  budgetMs?: number;
  progress?: PhaseProgress;
}): Promise<GrpoResult> {
  const started = performance.now();
  const { config } = options;
  const tokenizer = createTokenizer(options.checkpoint.tokenizer!);
  const model = await createLlamaModel(options.checkpoint);
  const trainer = await createPolicyTrainer(model, {
    schedule: {
      learningRate: config.learningRate,
      schedule: 'constant',
      warmupSteps: Math.min(5, config.steps),
    },
    maxGradNorm: 1,
    microBatchSize: 64,
    onNonFinite: 'skip',
    grpo: {
      epsilonLow: 0.2,
      epsilonHigh: 0.28,
      klCoefficient: config.klCoefficient,
      klEstimator: 'k3',
      aggregation: config.lossAggregation,
      ...(config.lossAggregation === 'seq-mean-token-sum-norm'
        ? { normalizer: options.maxNewTokens }
        : {}),
    },
  });
  const sampler = await createSampler(options.runtime, options.checkpoint);
  const rng = createRng(options.seed).derive('grpo');
  const history: GrpoStepRecord[] = [];
  let sampledCompletions = 0;
  let stoppedBecause: GrpoResult['stoppedBecause'] = 'steps';
  const evalSet = options.heldOut.slice(0, config.evalPrompts);
  try {
    const initialHeldOutAccuracy = await greedyAccuracy(sampler, evalSet, options.maxNewTokens);
    for (let step = 1; step <= config.steps; step++) {
      if (options.budgetMs !== undefined && performance.now() - started >= options.budgetMs) {
        stoppedBecause = 'time-budget';
        break;
      }
      type Group = {
        problem: ModArithProblem;
        completions: Completion[];
        correct: number[];
        format: number[];
      };
      const kept: Group[] = [];
      let first: { groups: Group[]; fracZeroStd: number } | undefined;
      let rounds = 0;
      while (kept.length < config.promptsPerStep && rounds <= config.maxResampleRounds) {
        const problems = Array.from(
          { length: config.promptsPerStep },
          () => options.train[rng.nextInt(options.train.length)]!,
        );
        const sampled = await sampler.sample({
          prompts: problems.map((problem) => problem.prompt),
          n: config.groupSize,
          maxNewTokens: options.maxNewTokens,
          temperature: config.temperature,
          seed: rng.nextUint32(),
        });
        rounds++;
        const groups: Group[] = sampled.map((completions, index) => {
          const problem = problems[index]!;
          return {
            problem,
            completions,
            correct: completions.map((completion) => correctness(completion.text, problem.answer)),
            format: completions.map((completion) => r1Format(completion.text)),
          };
        });
        sampledCompletions += groups.length * config.groupSize;
        const filtered = filterGroups(
          groups.map((group) =>
            group.correct.map((c, index) => c + config.formatWeight * group.format[index]!),
          ),
        );
        first ??= { groups, fracZeroStd: filtered.fracRewardZeroStd };
        for (const index of filtered.keptIndices) {
          if (kept.length < config.promptsPerStep) kept.push(groups[index]!);
        }
      }
      const all = first!.groups;
      const record: GrpoStepRecord = {
        step,
        elapsedMs: 0,
        reward: mean(
          all.flatMap((group) =>
            group.correct.map((c, index) => c + config.formatWeight * group.format[index]!),
          ),
        ),
        accuracy: mean(all.flatMap((group) => group.correct)),
        formatRate: mean(all.flatMap((group) => group.format)),
        meanLength: mean(all.flatMap((group) => group.completions.map((c) => c.tokenIds.length))),
        fracZeroStd: first!.fracZeroStd,
        rounds,
        keptGroups: kept.length,
        loss: 0,
        kl: 0,
        entropy: 0,
        clipFraction: 0,
        gradNorm: 0,
      };
      if (kept.length > 0) {
        const { advantages } = groupAdvantages(
          [kept.flatMap((group) => group.correct), kept.flatMap((group) => group.format)],
          { groupSize: config.groupSize, weights: [1, config.formatWeight] },
        );
        const completions = kept.flatMap((group) => group.completions);
        const sequences: TokenSequence[] = kept.flatMap((group) => {
          const promptIds = tokenizer.encode(group.problem.prompt);
          return group.completions.map((completion) => ({
            promptIds,
            completionIds: completion.tokenIds,
          }));
        });
        const mask = completions.map((completion) =>
          new Array<number>(completion.tokenIds.length).fill(
            config.maskTruncated && completion.finishReason === 'length' ? 0 : 1,
          ),
        );
        const usable = sequences.map((sequence) => sequence.completionIds.length > 0);
        const result = trainer.grpoStep({
          sequences: sequences.filter((_, index) => usable[index]),
          advantages: advantages.filter((_, index) => usable[index]),
          mask: mask.filter((_, index) => usable[index]),
        });
        const metrics = result.steps.at(-1)!;
        record.loss = metrics.loss;
        record.kl = metrics.kl;
        record.entropy = metrics.entropy;
        record.clipFraction = metrics.clipFraction;
        record.gradNorm = metrics.gradNorm;
        await sampler.updateWeights(model.toWeightSnapshot(trainer.step));
      }
      if (config.evalEvery > 0 && (step % config.evalEvery === 0 || step === config.steps)) {
        record.heldOutAccuracy = await greedyAccuracy(sampler, evalSet, options.maxNewTokens);
      }
      record.elapsedMs = performance.now() - started;
      history.push(record);
      // With a wall-clock budget the bar counts elapsed seconds (its total), otherwise steps.
      options.progress?.update(
        options.budgetMs === undefined
          ? step
          : Math.min(Math.round(record.elapsedMs / 1000), Math.round(options.budgetMs / 1000)),
        `step ${step} acc ${(100 * record.accuracy).toFixed(0)}% zero-std ${(100 * record.fracZeroStd).toFixed(0)}% kl ${record.kl.toFixed(3)}`,
      );
    }
    return {
      checkpoint: { ...options.checkpoint, tensors: model.toCheckpoint().tensors },
      history,
      initialHeldOutAccuracy,
      steps: history.length,
      sampledCompletions,
      timeMs: performance.now() - started,
      stoppedBecause,
    };
  } finally {
    options.progress?.stop();
    await sampler.close();
    trainer.dispose();
    model.dispose();
  }
}
