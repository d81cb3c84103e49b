import type { Checkpoint } from '@rlvr/model';
import {
  createGrpoTrainer,
  createLlamaModel,
  type GrpoMetricRecord,
  type GrpoConfig as TrainerGrpoConfig,
} from '@rlvr/trainer';
import { type GrpoConfig, TRAINER_GRPO_KEYS } from './config.js';
import type { PhaseProgress } from './progress.js';
import {
  correctness,
  correctnessReward,
  formatReward,
  hedged,
  hedgedReward,
  naiveCorrectnessReward,
} from './rewards.js';
import { createSampler, type Runtime } from './runtime.js';
import { type ModArithProblem, restated, termsOf } from './task.js';

/** Held-out check between steps: sampled (temperature 1) and greedy, split by difficulty. */
export type HeldOutCheck = {
  /** Sampled pass@1 (mean over `evalSamples` samples per prompt, temperature 1). */
  sampledAccuracy: number;
  greedyAccuracy: number;
  /** Mean sampled completion length, tokens. */
  meanLength: number;
  /** Fraction of sampled answers that are hedged lists. */
  hedgeRate: number;
  /** Fraction of sampled completions whose reasoning restates the question (`restated`). */
  restateRate: number;
  /** The same per number of operands (difficulty). */
  byTerms: { terms: number; prompts: number; sampledAccuracy: number; meanLength: number }[];
};

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
  /** `policy_loss` and `learning_rate` of the step. */
  policyLoss: number;
  learningRate: number;
  /** `reward/robust/mean`: the robust verifier's verdict (weight 0 when it is not the reward). */
  robustAccuracy: number;
  /** `reward/hedged/mean`: fraction of training samples whose answer is a hedged list. */
  hedgeRate: number;
  /** Greedy accuracy on held-out prompts (only on evaluation steps). */
  heldOutAccuracy?: number;
  /** The full held-out check (only on evaluation steps). */
  heldOut?: HeldOutCheck;
};

/** Result of {@link runGrpo}. */
export type GrpoResult = {
  checkpoint: Checkpoint;
  history: GrpoStepRecord[];
  /** Held-out greedy accuracy before the first step. */
  initialHeldOutAccuracy: number;
  /** The held-out check before the first step. */
  initialHeldOut: HeldOutCheck;
  steps: number;
  sampledCompletions: number;
  /** Updates skipped by the trainer (non-finite loss or gradients). */
  skippedUpdates: number;
  timeMs: number;
  /** The rollout engine @rlvr/rollout chose for the model (`sampler.engine`). */
  engine: string;
};

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Samples per held-out prompt of the check between steps (8: with 128 prompts, 1,024 samples per
 * check, so the claims' arm-vs-control comparisons are not decided by sampling noise).
 */
export const EVAL_SAMPLES = 8;

/** The held-out check: sampled pass@1 and length per difficulty, plus greedy accuracy. */
async function heldOutCheck(
  sampler: Awaited<ReturnType<typeof createSampler>>,
  problems: readonly ModArithProblem[],
  maxNewTokens: number,
  seed: number,
): Promise<HeldOutCheck> {
  const prompts = problems.map((problem) => problem.prompt);
  const sampled = await sampler.sample({
    prompts,
    n: EVAL_SAMPLES,
    maxNewTokens,
    temperature: 1,
    seed,
  });
  const greedy = await sampler.sample({ prompts, n: 1, maxNewTokens, temperature: 0 });
  const rows = sampled.flatMap((group, index) =>
    group.map((completion) => ({
      terms: termsOf(prompts[index]!),
      correct: correctness(completion.text, problems[index]!.answer),
      length: completion.tokenIds.length,
      hedged: hedged(completion.text),
      restated: restated(completion.text),
    })),
  );
  const terms = [...new Set(rows.map((row) => row.terms))].sort((a, b) => a - b);
  return {
    sampledAccuracy: mean(rows.map((row) => row.correct)),
    greedyAccuracy: mean(
      greedy.map((group, index) => correctness(group[0]!.text, problems[index]!.answer)),
    ),
    meanLength: mean(rows.map((row) => row.length)),
    hedgeRate: mean(rows.map((row) => row.hedged)),
    restateRate: mean(rows.map((row) => row.restated)),
    byTerms: terms.map((count) => {
      const bucket = rows.filter((row) => row.terms === count);
      return {
        terms: count,
        prompts: bucket.length / EVAL_SAMPLES,
        sampledAccuracy: mean(bucket.map((row) => row.correct)),
        meanLength: mean(bucket.map((row) => row.length)),
      };
    }),
  };
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

/**
 * The reward functions of the RL phases: correctness (weight 1; the robust math verifier, or the
 * naive checker of the reward-hacking claim) and the R1 format, plus two logged with weight 0 (the
 * robust verifier's verdict and the hedge rate), so every run records true accuracy.
 */
export function grpoRewards(formatWeight: number, reward: 'robust' | 'naive' = 'robust') {
  return [
    { name: 'correct', fn: reward === 'naive' ? naiveCorrectnessReward : correctnessReward },
    { name: 'format', fn: formatReward, weight: formatWeight },
    { name: 'robust', fn: correctnessReward, weight: 0 },
    { name: 'hedged', fn: hedgedReward, weight: 0 },
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
    policyLoss: at('policy_loss'),
    learningRate: at('learning_rate'),
    robustAccuracy: at('reward/robust/mean'),
    hedgeRate: at('reward/hedged/mean'),
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
 * run config's trainer keys say, with `overrides` (other `GrpoConfig` values: the claims' ablations,
 * e.g. `dynamicSampling: false` or `overlong`) on top. The app drives `step()` itself, so it can
 * check held-out accuracy (sampled and greedy, per difficulty) between steps. The budget is
 * `maxSteps` generation steps, so a run is reproducible from its seed.
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
  /** The correctness reward: the robust math verifier (default) or the naive checker. */
  reward?: 'robust' | 'naive';
  overrides?: Partial<TrainerGrpoConfig>;
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
  const evalSet = options.heldOut.slice(0, config.evalPrompts);
  // The same sampling seed at every check: differences between checks are the policy's.
  const check = () => heldOutCheck(sampler, evalSet, options.maxNewTokens, options.seed + 7919);
  let grpo: Awaited<ReturnType<typeof createGrpoTrainer>> | undefined;
  try {
    grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset: options.train.map(({ id, prompt, answer }) => ({ id, prompt, answer })),
      rewards: grpoRewards(config.formatWeight, options.reward),
      config: {
        ...trainerConfig(config, {
          maxSteps: options.maxSteps,
          maxNewTokens: options.maxNewTokens,
          seed: options.seed,
          outputDir: options.outputDir,
        }),
        ...options.overrides,
      },
      // This phase runs (again) only when it has no finished record for this config: what an
      // earlier attempt left in its trainer folder is replaced, nothing outside it.
      overwrite: true,
      onLog: diagnostics.log,
    });
    const initialHeldOut = await check();
    while (grpo.completedSteps < options.maxSteps) {
      const metrics = await grpo.step();
      const record = stepRecord(metrics, 0);
      sampledCompletions +=
        (metrics.metrics['dynamic_sampling/generated_groups'] ?? 0) * grpo.config.groupSize;
      skippedUpdates += metrics.metrics.skipped_updates ?? 0;
      const step = record.step;
      if (config.evalEvery > 0 && (step % config.evalEvery === 0 || step === options.maxSteps)) {
        record.heldOut = await check();
        record.heldOutAccuracy = record.heldOut.greedyAccuracy;
      }
      record.elapsedMs = performance.now() - started;
      history.push(record);
      options.progress?.update(
        step,
        `step ${step} acc ${(100 * record.robustAccuracy).toFixed(0)}% zero-std ${(100 * record.fracZeroStd).toFixed(0)}% kl ${record.kl.toFixed(3)}`,
      );
    }
    return {
      checkpoint: { ...options.checkpoint, tensors: model.toCheckpoint().tensors },
      history,
      initialHeldOutAccuracy: initialHeldOut.greedyAccuracy,
      initialHeldOut,
      steps: history.length,
      sampledCompletions,
      skippedUpdates,
      timeMs: performance.now() - started,
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
