import type { Checkpoint } from '@rlvr/model';
import {
  createGrpoTrainer,
  createLlamaModel,
  type GrpoMetricRecord,
  type GrpoConfig as TrainerGrpoConfig,
} from '@rlvr/trainer';
import { type GrpoConfig, TRAINER_GRPO_KEYS } from './config.js';
import type { PhaseProgress } from './progress.js';
import { correctness, correctnessReward, formatReward } from './rewards.js';
import { createSampler, type Runtime } from './runtime.js';
import type { ModArithProblem } from './task.js';

/** One GRPO step as the report draws it, read from the trainer's metrics record. */
export type GrpoStepRecord = {
  step: number;
  /** Wall time since the phase started, ms. */
  elapsedMs: number;
  /** `reward/mean`: combined reward (correctness + formatWeight · format) of every sample. */
  reward: number;
  /** `reward/correct/mean`: fraction of correct completions (training prompts). */
  accuracy: number;
  /** `reward/format/mean`: fraction of completions in the R1 format. */
  formatRate: number;
  /** `completions/mean_length`, tokens. */
  meanLength: number;
  /** `frac_reward_zero_std`: fraction of sampled groups whose rewards all agree (no signal). */
  fracZeroStd: number;
  /** `dynamic_sampling/rounds`. */
  rounds: number;
  /** `dynamic_sampling/kept_groups`: groups trained on. */
  keptGroups: number;
  loss: number;
  /** `kl`: k3 KL to the warm-start (reference) policy. */
  kl: number;
  /** `entropy`: mean token entropy of the policy before the update, nats. */
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
  /** Updates skipped by the trainer (non-finite loss or gradients). */
  skippedUpdates: number;
  timeMs: number;
  /** Why the loop ended. */
  stoppedBecause: 'steps' | 'time-budget';
  /** The rollout engine @rlvr/rollout chose for the model (`sampler.engine`). */
  engine: string;
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
 * The trainer's `GrpoConfig` of a phase: the run config's trainer keys as they are, plus what the
 * app decides (`maxNewTokens`, `seed`, `outputDir`, no console output of its own).
 */
export function trainerConfig(
  config: GrpoConfig,
  settings: { maxSteps: number; maxNewTokens: number; seed: number; outputDir?: string },
): TrainerGrpoConfig {
  const out: Record<string, unknown> = {};
  for (const key of TRAINER_GRPO_KEYS) {
    if (config[key] !== undefined) out[key] = config[key];
  }
  return {
    ...(out as Omit<TrainerGrpoConfig, 'maxSteps' | 'maxNewTokens'>),
    maxSteps: settings.maxSteps,
    maxNewTokens: settings.maxNewTokens,
    seed: settings.seed,
    ...(settings.outputDir === undefined ? {} : { outputDir: settings.outputDir }),
    progress: false,
  };
}

/** The reward functions of the RL phases: correctness (weight 1) and the R1 format. */
export function grpoRewards(formatWeight: number) {
  return [
    { name: 'correct', fn: correctnessReward },
    { name: 'format', fn: formatReward, weight: formatWeight },
  ];
}

function stepRecord(record: GrpoMetricRecord, elapsedMs: number): GrpoStepRecord {
  const m = record.metrics;
  const at = (key: string) => m[key] ?? 0;
  return {
    step: record.step,
    elapsedMs,
    reward: at('reward/mean'),
    accuracy: at('reward/correct/mean'),
    formatRate: at('reward/format/mean'),
    meanLength: at('completions/mean_length'),
    fracZeroStd: at('frac_reward_zero_std'),
    rounds: at('dynamic_sampling/rounds'),
    keptGroups: at('dynamic_sampling/kept_groups'),
    loss: at('loss'),
    kl: at('kl'),
    entropy: at('entropy'),
    clipFraction: at('clip_fraction'),
    gradNorm: at('grad_norm'),
  };
}

/**
 * Logs each kind of trainer diagnostic once (numbers masked), so a message that repeats every step
 * does not flood the log; returns a function that reports how many repeats were not printed.
 */
function onceLogger(log: (line: string) => void, label: string) {
  const seen = new Map<string, number>();
  return {
    log(message: string) {
      const kind = message.replace(/\[grpo step \d+\] /, '').replace(/\d+(\.\d+)?/g, '#');
      const count = seen.get(kind) ?? 0;
      seen.set(kind, count + 1);
      if (count === 0) log(`[${label}] ${message}`);
    },
    summary() {
      for (const [kind, count] of seen) {
        if (count > 1) log(`[${label}] (${count - 1} more like: ${kind.slice(0, 80)}…)`);
      }
    },
  };
}

/**
 * One GRPO phase on @rlvr/trainer's `GrpoTrainer` with an @rlvr/rollout ONNX sampler (engine of
 * the sampler's choosing): rewards = correctness + formatWeight · R1 format, everything else as the
 * run config's trainer keys say. The app drives `step()` itself, so it can check held-out greedy
 * accuracy between steps and stop on a wall-clock budget (`budgetMs`, the RL-only student's).
 * The trainer writes `metrics.jsonl`, `completions.jsonl` and its checkpoints under `outputDir`.
 */
export async function runGrpo(options: {
  runtime: Runtime;
  checkpoint: Checkpoint;
  train: readonly ModArithProblem[];
  heldOut: readonly ModArithProblem[];
  config: GrpoConfig;
  maxSteps: number;
  maxNewTokens: number;
  seed: number;
  outputDir: string;
  label: string;
  budgetMs?: number;
  progress?: PhaseProgress;
  log: (line: string) => void;
}): Promise<GrpoResult> {
  const started = performance.now();
  const { config } = options;
  const model = await createLlamaModel(options.checkpoint);
  const sampler = await createSampler(options.runtime, options.checkpoint);
  const diagnostics = onceLogger(options.log, options.label);
  const history: GrpoStepRecord[] = [];
  let sampledCompletions = 0;
  let skippedUpdates = 0;
  let stoppedBecause: GrpoResult['stoppedBecause'] = 'steps';
  const evalSet = options.heldOut.slice(0, config.evalPrompts);
  let grpo: Awaited<ReturnType<typeof createGrpoTrainer>> | undefined;
  try {
    grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset: options.train.map(({ id, prompt, answer }) => ({ id, prompt, answer })),
      rewards: grpoRewards(config.formatWeight),
      config: trainerConfig(config, {
        maxSteps: options.maxSteps,
        maxNewTokens: options.maxNewTokens,
        seed: options.seed,
        outputDir: options.outputDir,
      }),
      // This phase runs (again) only when it has no finished record for this config: what an
      // earlier attempt left in its trainer folder is replaced, nothing outside it.
      overwrite: true,
      onLog: diagnostics.log,
    });
    const initialHeldOutAccuracy = await greedyAccuracy(sampler, evalSet, options.maxNewTokens);
    while (grpo.completedSteps < options.maxSteps) {
      if (options.budgetMs !== undefined && performance.now() - started >= options.budgetMs) {
        stoppedBecause = 'time-budget';
        break;
      }
      const metrics = await grpo.step();
      const record = stepRecord(metrics, 0);
      sampledCompletions +=
        (metrics.metrics['dynamic_sampling/generated_groups'] ?? 0) * (config.groupSize ?? 8);
      skippedUpdates += metrics.metrics.skipped_updates ?? 0;
      const step = record.step;
      if (config.evalEvery > 0 && (step % config.evalEvery === 0 || step === options.maxSteps)) {
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
    // A budget-stopped run did not reach maxSteps, where the trainer checkpoints by itself.
    if (grpo.completedSteps < options.maxSteps) await grpo.saveCheckpoint();
    return {
      checkpoint: { ...options.checkpoint, tensors: model.toCheckpoint().tensors },
      history,
      initialHeldOutAccuracy,
      steps: history.length,
      sampledCompletions,
      skippedUpdates,
      timeMs: performance.now() - started,
      stoppedBecause,
      engine: sampler.engine,
    };
  } finally {
    diagnostics.summary();
    options.progress?.stop();
    await sampler.close();
    grpo?.dispose();
    model.dispose();
  }
}
