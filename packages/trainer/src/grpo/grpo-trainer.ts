import { appendFile, mkdir, open, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AbortedError,
  assertSampler,
  type Completion,
  type CompletionRecord,
  createRng,
  filterGroups,
  groupAdvantages,
  InvalidArgumentError,
  type MetricRecord,
  maskTruncatedCompletions,
  mismatchCorrection,
  type Rng,
  type Sampler,
  ShapeMismatchError,
  softOverlongPenalty,
  type WeightedReward,
} from '@rlvr/core';
import cliProgress from 'cli-progress';
import { createLlamaModel, type LlamaModel } from '../model/llama-model.js';
import type { TokenSequence } from '../train/batch.js';
import {
  createPolicyTrainer,
  type GrpoStepMetrics,
  type PolicyTrainer,
} from '../train/policy-trainer.js';
import { type GrpoConfig, type ResolvedGrpoConfig, resolveGrpoConfig } from './grpo-config.js';
import { loadPromptDataset, type PromptRecord, validatePromptRecords } from './prompt-dataset.js';
import {
  listCheckpoints,
  loadRunCheckpoint,
  type RunState,
  saveRunCheckpoint,
} from './run-checkpoint.js';

/** One metrics line of a GRPO run (`metrics.jsonl`): core's record plus diagnostics. */
export type GrpoMetricRecord = MetricRecord & {
  /** Human-readable warnings about this step (also sent to `onLog`). */
  diagnostics?: string[];
};

/** Options of {@link createGrpoTrainer}. */
export type GrpoTrainerOptions = {
  /** The policy (trained in place). */
  model: LlamaModel;
  /** Any core `Sampler`; it receives the new weights after every generation step. */
  sampler: Sampler;
  /** Prompt records, or the path of a JSONL file of them. */
  dataset: readonly PromptRecord[] | string;
  /** Reward functions (weighted sum, or GDPO with `multiReward: 'normalize_then_sum'`). */
  rewards: readonly WeightedReward[];
  config: GrpoConfig;
  /** Encodes prompts when the sampler does not report `promptTokenIds`. */
  tokenizer?: { encode(text: string): number[] };
  /**
   * Continue from a checkpoint: `true` = the newest one under `outputDir/checkpoints` (a fresh
   * start when there is none), or the path of one checkpoint folder.
   */
  resume?: boolean | string;
  /** Receives diagnostics and skip notices (default: stderr unless `quiet`). */
  onLog?: (message: string) => void;
  /** Called with every metrics record. */
  onStep?: (record: GrpoMetricRecord) => void;
};

/** Result of {@link GrpoTrainer.train}. */
export type GrpoTrainResult = {
  /** Generation steps completed in total (including those before a resume). */
  steps: number;
  /** The last metrics record written, if any. */
  last: GrpoMetricRecord | undefined;
};

type Sample = {
  completion: Completion;
  promptIds: number[];
  /** Each reward function's value (null: not applicable / non-finite), then `overlong`. */
  rewards: (number | null)[];
};

type Group = { record: PromptRecord; samples: Sample[] };

const FN = 'GrpoTrainer';

function meanStd(values: readonly number[]): { mean: number; std: number } {
  if (values.length === 0) return { mean: 0, std: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance =
    values.length > 1
      ? values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (values.length - 1)
      : 0;
  return { mean, std: Math.sqrt(variance) };
}

/**
 * The GRPO loop: sample G completions per prompt from a `Sampler`, score them with reward
 * functions, compute group advantages (with @rlvr/core), train with {@link PolicyTrainer.grpoStep},
 * push the new weights to the sampler, log metrics and completions as JSONL, checkpoint
 * atomically, resume exactly. Create it with {@link createGrpoTrainer}.
 */
export class GrpoTrainer {
  /** The policy trainer (optimizer, loss settings). */
  readonly policy: PolicyTrainer;
  /** The trained model. */
  readonly model: LlamaModel;
  /** Settings with defaults applied. */
  readonly config: ResolvedGrpoConfig;
  private readonly sampler: Sampler;
  private readonly dataset: PromptRecord[];
  private readonly rewards: readonly WeightedReward[];
  private readonly tokenizer: { encode(text: string): number[] } | undefined;
  private readonly log: (message: string) => void;
  private readonly onStep: ((record: GrpoMetricRecord) => void) | undefined;
  private rng: Rng;
  private cursor: { epoch: number; position: number };
  private order: number[] | undefined;
  private orderEpoch = -1;
  private completed: number;
  private counters: Record<string, number>;
  private initialEntropy: number | null;
  private files: { metricsBytes: number; completionsBytes: number };
  private readonly started = performance.now();
  private lastCheckpointMs = 0;
  private warnedLogprobs = false;

  /** @internal use {@link createGrpoTrainer}. */
  constructor(settings: {
    policy: PolicyTrainer;
    sampler: Sampler;
    dataset: PromptRecord[];
    rewards: readonly WeightedReward[];
    config: ResolvedGrpoConfig;
    tokenizer: { encode(text: string): number[] } | undefined;
    log: (message: string) => void;
    onStep: ((record: GrpoMetricRecord) => void) | undefined;
    state: RunState;
  }) {
    this.policy = settings.policy;
    this.model = settings.policy.model;
    this.sampler = settings.sampler;
    this.dataset = settings.dataset;
    this.rewards = settings.rewards;
    this.config = settings.config;
    this.tokenizer = settings.tokenizer;
    this.log = settings.log;
    this.onStep = settings.onStep;
    const { state } = settings;
    this.rng = createRng(state.rng);
    this.cursor = { ...state.cursor };
    this.completed = state.step;
    this.counters = { ...state.counters };
    this.initialEntropy = state.initialEntropy;
    this.files = { ...state.files };
  }

  /** Generation steps completed (including those before a resume). */
  get completedSteps(): number {
    return this.completed;
  }

  /**
   * Runs steps until `config.maxSteps`, checkpointing every `saveEvery` steps and at the end.
   * An aborted `signal` stops between steps (or inside sampling) with an `AbortedError`; the
   * newest checkpoint then resumes the run exactly.
   *
   * @example
   * ```ts
   * const grpo = await createGrpoTrainer({ model, sampler, dataset, rewards, config });
   * const { steps, last } = await grpo.train();
   * ```
   */
  async train(options?: { signal?: AbortSignal }): Promise<GrpoTrainResult> {
    const signal = options?.signal;
    const { maxSteps } = this.config;
    const showBar =
      !this.config.quiet &&
      (this.config.progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI));
    const bar = showBar
      ? new cliProgress.SingleBar(
          {
            format:
              'GRPO {bar} {value}/{total} | reward {reward} | loss {loss} | {stepSeconds}s/step | ETA {eta_formatted}',
            stream: process.stderr,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
    bar?.start(maxSteps, this.completed, { reward: '-', loss: '-', stepSeconds: '-' });
    let last: GrpoMetricRecord | undefined;
    try {
      while (this.completed < maxSteps) {
        if (signal?.aborted) {
          throw new AbortedError({ operation: 'GrpoTrainer.train()', cause: signal.reason });
        }
        last = await this.step({ ...(signal ? { signal } : {}) });
        bar?.update(this.completed, {
          reward: (last.metrics['reward/mean'] ?? 0).toFixed(3),
          loss: (last.metrics.loss ?? 0).toExponential(2),
          stepSeconds: ((last.metrics['time/step_ms'] ?? 0) / 1000).toFixed(2),
        });
      }
    } finally {
      bar?.stop();
    }
    return { steps: this.completed, last };
  }

  /**
   * One generation step: sample, score, advantages, `grpoStep`, weight push, metrics, and a
   * checkpoint when due.
   * @throws {ShapeMismatchError} when the sampler breaks its contract (wrong number of groups or
   * completions, logprobs not one per token).
   */
  async step(options?: { signal?: AbortSignal }): Promise<GrpoMetricRecord> {
    const config = this.config;
    const stepStarted = performance.now();
    const stepNumber = this.completed + 1;
    const diagnostics: string[] = [];
    const metrics: Record<string, number> = {};
    const counters = { overContext: 0, nonFiniteRewards: 0, nonFiniteLogprobs: 0 };

    // 1. Sample and score, with dynamic sampling rounds.
    let rolloutMs = 0;
    let rewardMs = 0;
    let generatedTokens = 0;
    const generated: Group[] = [];
    const kept: Group[] = [];
    let rounds = 0;
    const maxRounds = config.dynamic?.maxRounds ?? 1;
    while (rounds < maxRounds && kept.length < config.promptsPerStep) {
      rounds += 1;
      const records = this.nextPrompts(config.promptsPerStep);
      const sampleStarted = performance.now();
      const result = await this.sampler.sample(
        {
          prompts: records.map((record) => record.prompt),
          n: config.groupSize,
          maxNewTokens: config.maxNewTokens,
          temperature: config.temperature,
          ...(config.topP === undefined ? {} : { topP: config.topP }),
          ...(config.topK === undefined ? {} : { topK: config.topK }),
          ...(config.minP === undefined ? {} : { minP: config.minP }),
          ...(config.repetitionPenalty === undefined
            ? {}
            : { repetitionPenalty: config.repetitionPenalty }),
          ...(config.stop === undefined ? {} : { stop: config.stop }),
          seed: this.rng.nextUint32(),
          returnModelLogprobs: true,
        },
        options?.signal ? { signal: options.signal } : undefined,
      );
      rolloutMs += performance.now() - sampleStarted;
      const groups = this.checkSamplerOutput(result, records);
      for (const group of groups) {
        for (const sample of group.samples) generatedTokens += sample.completion.tokenIds.length;
      }
      const rewardStarted = performance.now();
      await this.score(groups, counters);
      rewardMs += performance.now() - rewardStarted;
      // Groups with non-finite behaviour logprobs are dropped (counted).
      const usable = groups.filter((group) => {
        const bad = group.samples.some(
          (sample) => !this.behaviourOf(sample.completion).every(Number.isFinite),
        );
        if (bad) counters.nonFiniteLogprobs += 1;
        return !bad;
      });
      generated.push(...groups);
      if (config.dynamic) {
        const filtered = filterGroups(
          usable.map((group) => this.combined(group)),
          { minStd: config.dynamic.minStd },
        );
        kept.push(...filtered.keptIndices.map((index) => usable[index]!));
      } else {
        kept.push(...usable);
      }
    }
    if (config.dynamic && kept.length > config.promptsPerStep) kept.length = config.promptsPerStep;

    // 2. Reward metrics over everything generated this step.
    const stats = filterGroups(
      generated.map((group) => this.combined(group)),
      { minStd: 0 },
    );
    const allCombined = generated.flatMap((group) => this.combined(group)).filter(isNumber);
    const overall = meanStd(allCombined);
    metrics['reward/mean'] = overall.mean;
    metrics['reward/std'] = overall.std;
    this.rewardColumns().forEach((name, column) => {
      const values = generated.flatMap((group) =>
        group.samples.map((sample) => sample.rewards[column]!),
      );
      const present = values.filter(isNumber);
      const { mean, std } = meanStd(present);
      metrics[`reward/${name}/mean`] = mean;
      metrics[`reward/${name}/std`] = std;
      metrics[`reward/${name}/null_fraction`] =
        values.length > 0 ? 1 - present.length / values.length : 0;
    });
    metrics.frac_reward_zero_std = stats.fracRewardZeroStd;
    const lengths = generated.flatMap((group) =>
      group.samples.map((sample) => sample.completion.tokenIds.length),
    );
    const clipped = generated.flatMap((group) =>
      group.samples.filter((sample) => sample.completion.finishReason === 'length'),
    ).length;
    metrics['completions/mean_length'] = meanStd(lengths).mean;
    metrics['completions/min_length'] = lengths.length > 0 ? Math.min(...lengths) : 0;
    metrics['completions/max_length'] = lengths.length > 0 ? Math.max(...lengths) : 0;
    metrics['completions/clipped_ratio'] = lengths.length > 0 ? clipped / lengths.length : 0;
    metrics['dynamic_sampling/rounds'] = rounds;
    metrics['dynamic_sampling/generated_groups'] = generated.length;
    metrics['dynamic_sampling/kept_groups'] = kept.length;

    // 3. Advantages over the kept groups; drop samples longer than the context.
    let advantages: number[] = [];
    if (kept.length > 0) {
      const columns = this.rewardColumns();
      const perFunction = columns.map((_, column) =>
        kept.flatMap((group) => group.samples.map((sample) => sample.rewards[column]!)),
      );
      advantages = groupAdvantages(perFunction, {
        groupSize: config.groupSize,
        baseline: config.advantageBaseline,
        scale: config.scaleRewards,
        std: config.rewardStd,
        weights: this.rewardWeights(),
        multiReward: config.multiReward,
      }).advantages;
    }
    const contextLimit = this.model.config.max_position_embeddings;
    const trainIndex: number[] = [];
    const flat = kept.flatMap((group) => group.samples.map((sample) => ({ group, sample })));
    flat.forEach(({ sample }, index) => {
      if (sample.promptIds.length + sample.completion.tokenIds.length > contextLimit) {
        counters.overContext += 1;
      } else {
        trainIndex.push(index);
      }
    });
    if (counters.overContext > 0) {
      diagnostics.push(
        `${counters.overContext} completion(s) longer than the context (${contextLimit} tokens) were skipped`,
      );
    }

    // 4. Train.
    let trainMs = 0;
    let logprobMs = 0;
    let syncMs = 0;
    let trainTokens = 0;
    let lossTokens = 0;
    let updates: GrpoStepMetrics[] = [];
    if (trainIndex.length > 0) {
      const sequences: TokenSequence[] = trainIndex.map((index) => ({
        promptIds: flat[index]!.sample.promptIds,
        completionIds: flat[index]!.sample.completion.tokenIds,
      }));
      const behaviourLogprobs = trainIndex.map((index) =>
        this.behaviourOf(flat[index]!.sample.completion),
      );
      let mask = sequences.map((sequence) =>
        new Array<number>(sequence.completionIds.length).fill(1),
      );
      if (config.maskTruncatedCompletions) {
        mask = maskTruncatedCompletions(
          mask,
          trainIndex.map((index) => flat[index]!.sample.completion.finishReason),
        );
      }
      const logprobStarted = performance.now();
      const current = this.policy.completionLogprobs(sequences);
      logprobMs = performance.now() - logprobStarted;
      const mismatch = mismatchCorrection({
        trainerLogprobs: current.logprobs,
        behaviourLogprobs,
        mode: 'token-truncate',
        cap: Number.MAX_VALUE,
      }).metrics;
      metrics['mismatch/mean_abs_logprob_diff'] = mismatch.meanAbsLogprobDiff;
      metrics['mismatch/max_abs_logprob_diff'] = mismatch.maxAbsLogprobDiff;
      metrics['mismatch/is_ratio_mean'] = mismatch.isRatioMean;
      metrics['mismatch/is_ratio_min'] = mismatch.isRatioMin;
      metrics['mismatch/is_ratio_max'] = mismatch.isRatioMax;
      const entropyValues = current.entropies.flat();
      const entropy = meanStd(entropyValues).mean;
      metrics.entropy = entropy;
      const trainStarted = performance.now();
      const result = this.policy.grpoStep(
        {
          sequences,
          advantages: trainIndex.map((index) => advantages[index]!),
          mask,
          behaviourLogprobs,
        },
        {
          numIterations: config.numIterations,
          ...(config.miniBatchSize === undefined ? {} : { miniBatchSize: config.miniBatchSize }),
        },
      );
      trainMs = performance.now() - trainStarted;
      updates = result.steps;
      trainTokens =
        sequences.reduce((sum, s) => sum + s.promptIds.length + s.completionIds.length, 0) *
        config.numIterations;
      lossTokens = mask.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0), 0);
      const syncStarted = performance.now();
      await this.sampler.updateWeights?.(this.model.toWeightSnapshot(this.policy.step));
      syncMs = performance.now() - syncStarted;
      if (this.initialEntropy === null) this.initialEntropy = entropy;
      else if (
        this.initialEntropy > 0 &&
        entropy < config.entropyCollapseRatio * this.initialEntropy
      ) {
        diagnostics.push(
          `entropy is collapsing: ${entropy.toFixed(4)} nats vs ${this.initialEntropy.toFixed(4)} at the first step; lower the learning rate, raise the temperature, use clip-higher (epsilonHigh) or an entropy bonus`,
        );
      }
    } else {
      this.counters.emptySteps = (this.counters.emptySteps ?? 0) + 1;
      diagnostics.push(
        'no group left to train on (every group had zero reward variance or was skipped): no update this step',
      );
    }
    const mean = (key: keyof GrpoStepMetrics) =>
      updates.length > 0
        ? updates.reduce((sum, update) => sum + (update[key] as number), 0) / updates.length
        : 0;
    metrics.loss = mean('loss');
    metrics.policy_loss = mean('policyLoss');
    metrics.grad_norm = mean('gradNorm');
    metrics.learning_rate = updates.length > 0 ? updates[updates.length - 1]!.learningRate : 0;
    metrics.kl = mean('kl');
    metrics.approx_kl = mean('approxKl');
    metrics['clip_ratio/low_mean'] = mean('clipRatioLow');
    metrics['clip_ratio/high_mean'] = mean('clipRatioHigh');
    metrics['clip_ratio/region_mean'] = mean('clipRatioRegion');
    metrics.clip_fraction = mean('clipFraction');
    metrics.optimizer_step = this.policy.step;
    metrics.skipped_updates = updates.filter((update) => update.skipped).length;
    metrics['skipped/over_context'] = counters.overContext;
    metrics['skipped/non_finite_rewards'] = counters.nonFiniteRewards;
    metrics['skipped/non_finite_logprobs_groups'] = counters.nonFiniteLogprobs;
    metrics['tokens/rollout'] = generatedTokens;
    metrics['tokens/train'] = trainTokens;
    metrics['tokens/loss'] = lossTokens;
    for (const [name, value] of [
      ['overContext', counters.overContext],
      ['nonFiniteRewards', counters.nonFiniteRewards],
      ['nonFiniteLogprobs', counters.nonFiniteLogprobs],
      ['skippedUpdates', metrics.skipped_updates],
    ] as const) {
      this.counters[name] = (this.counters[name] ?? 0) + value;
    }
    if (metrics.skipped_updates > 0) {
      diagnostics.push(
        `${metrics.skipped_updates} update(s) skipped: non-finite loss or gradients (${this.policy.skippedSteps} in total)`,
      );
    }
    if (counters.nonFiniteRewards > 0) {
      diagnostics.push(
        `${counters.nonFiniteRewards} non-finite reward value(s) were treated as not applicable (null)`,
      );
    }
    if (counters.nonFiniteLogprobs > 0) {
      diagnostics.push(
        `${counters.nonFiniteLogprobs} group(s) with non-finite sampler logprobs were dropped`,
      );
    }
    if (generated.length > 0 && stats.fracRewardZeroStd === 1) {
      diagnostics.push(
        'every group has zero reward variance: all advantages are 0, so loss ≈ 0 and no learning signal this step (try dynamicSampling, a larger groupSize, or prompts of fitting difficulty)',
      );
    }
    if (
      stepNumber === 1 &&
      config.numIterations === 1 &&
      config.beta === 0 &&
      (config.entropyCoefficient ?? 0) === 0
    ) {
      diagnostics.push(
        'μ = 1 and β = 0: the reported loss is ≈ 0 by construction (ratio = 1 and group-normalized advantages average to 0); watch reward/mean and grad_norm, not the loss',
      );
    }

    // 5. Timing.
    metrics['time/rollout_ms'] = rolloutMs;
    metrics['time/reward_ms'] = rewardMs;
    metrics['time/logprob_ms'] = logprobMs;
    metrics['time/train_ms'] = trainMs;
    metrics['time/weight_sync_ms'] = syncMs;
    metrics['time/last_checkpoint_ms'] = this.lastCheckpointMs;
    metrics['tokens_per_second/rollout'] = rolloutMs > 0 ? (generatedTokens * 1000) / rolloutMs : 0;
    metrics['tokens_per_second/train'] = trainMs > 0 ? (trainTokens * 1000) / trainMs : 0;
    metrics['time/step_ms'] = performance.now() - stepStarted;

    this.completed = stepNumber;
    const record: GrpoMetricRecord = {
      step: stepNumber,
      elapsedMs: performance.now() - this.started,
      phase: 'train',
      metrics,
      ...(diagnostics.length > 0 ? { diagnostics } : {}),
    };
    for (const message of diagnostics) this.log(`[grpo step ${stepNumber}] ${message}`);
    await this.writeRecords(record, kept, advantages);
    this.onStep?.(record);
    if (
      this.config.outputDir !== undefined &&
      (stepNumber % config.saveEvery === 0 || stepNumber === config.maxSteps)
    ) {
      await this.saveCheckpoint();
    }
    return record;
  }

  /**
   * Writes a checkpoint of the run now (model, reference, optimizer, RNG, data position, step,
   * log offsets) under `outputDir/checkpoints`, atomically; keeps the newest `keepLast`.
   * @throws {InvalidArgumentError} without `config.outputDir`.
   */
  async saveCheckpoint(): Promise<string> {
    const outputDir = this.config.outputDir;
    if (outputDir === undefined) {
      throw new InvalidArgumentError({
        parameter: 'config.outputDir',
        functionName: 'GrpoTrainer.saveCheckpoint',
        value: undefined,
        expected: 'a folder to write checkpoints to',
      });
    }
    const started = performance.now();
    const path = await saveRunCheckpoint(
      join(outputDir, 'checkpoints'),
      {
        model: this.model.toCheckpoint(),
        ...(this.policy.reference ? { reference: this.policy.reference.toCheckpoint() } : {}),
        optimizer: this.policy.getState().optimizer,
        state: this.runState(),
      },
      this.config.keepLast,
    );
    this.lastCheckpointMs = performance.now() - started;
    return path;
  }

  /** Frees the policy trainer's optimizer state and reference model (not the model). */
  dispose(): void {
    this.policy.dispose();
  }

  private runState(): RunState {
    return {
      format: 'rlvr-grpo-run-v1',
      step: this.completed,
      skippedSteps: this.policy.skippedSteps,
      rng: this.rng.getState(),
      cursor: { ...this.cursor },
      files: { ...this.files },
      counters: { ...this.counters },
      initialEntropy: this.initialEntropy,
      datasetSize: this.dataset.length,
    };
  }

  private nextPrompts(count: number): PromptRecord[] {
    const out: PromptRecord[] = [];
    for (let index = 0; index < count; index++) {
      if (this.cursor.position >= this.dataset.length) {
        this.cursor = { epoch: this.cursor.epoch + 1, position: 0 };
      }
      if (this.orderEpoch !== this.cursor.epoch) {
        const order = this.dataset.map((_, i) => i);
        this.order = this.config.shuffle
          ? createRng(this.config.seed).derive(`data-epoch-${this.cursor.epoch}`).shuffle(order)
          : order;
        this.orderEpoch = this.cursor.epoch;
      }
      out.push(this.dataset[this.order![this.cursor.position]!]!);
      this.cursor.position += 1;
    }
    return out;
  }

  private checkSamplerOutput(result: unknown, records: PromptRecord[]): Group[] {
    const functionName = `${FN}.step`;
    if (!Array.isArray(result) || result.length !== records.length) {
      throw new ShapeMismatchError({
        parameter: 'sampler.sample() result',
        functionName,
        expected: `${records.length} groups (one per prompt)`,
        actual: Array.isArray(result) ? `${result.length} groups` : typeof result,
      });
    }
    return records.map((record, groupIndex) => {
      const group = result[groupIndex] as Completion[];
      if (!Array.isArray(group) || group.length !== this.config.groupSize) {
        throw new ShapeMismatchError({
          parameter: `sampler.sample() result[${groupIndex}]`,
          functionName,
          expected: `${this.config.groupSize} completions (groupSize)`,
          actual: Array.isArray(group) ? `${group.length} completions` : typeof group,
        });
      }
      let encoded: number[] | undefined;
      const samples = group.map((completion, sampleIndex) => {
        const where = `sampler.sample() result[${groupIndex}][${sampleIndex}]`;
        if (
          completion === null ||
          typeof completion !== 'object' ||
          !Array.isArray(completion.tokenIds) ||
          !Array.isArray(completion.logprobs) ||
          completion.logprobs.length !== completion.tokenIds.length ||
          (completion.modelLogprobs !== undefined &&
            completion.modelLogprobs.length !== completion.tokenIds.length)
        ) {
          throw new ShapeMismatchError({
            parameter: where,
            functionName,
            expected: 'a Completion with one logprob (and model logprob) per token id',
            actual:
              completion && Array.isArray(completion.tokenIds)
                ? `${completion.tokenIds.length} token ids, ${completion.logprobs?.length} logprobs`
                : String(completion),
          });
        }
        let promptIds = completion.promptTokenIds;
        if (promptIds === undefined) {
          if (this.tokenizer === undefined) {
            throw new InvalidArgumentError({
              parameter: 'tokenizer',
              functionName,
              value: undefined,
              expected:
                'a tokenizer to encode prompts, since the sampler reports no promptTokenIds',
            });
          }
          encoded ??= this.tokenizer.encode(record.prompt);
          promptIds = encoded;
        }
        return { completion, promptIds, rewards: [] };
      });
      return { record, samples };
    });
  }

  private behaviourOf(completion: Completion): number[] {
    if (completion.modelLogprobs !== undefined) return completion.modelLogprobs;
    const filtered =
      this.config.temperature !== 1 ||
      this.config.topP !== undefined ||
      this.config.topK !== undefined ||
      this.config.minP !== undefined;
    if (filtered && !this.warnedLogprobs) {
      this.warnedLogprobs = true;
      this.log(
        'the sampler returned no modelLogprobs; its logprobs come from the tempered/filtered distribution, so the mismatch metrics compare different distributions',
      );
    }
    return completion.logprobs;
  }

  private rewardColumns(): string[] {
    const names = this.rewards.map((reward) => reward.name);
    return this.config.overlong ? [...names, 'overlong'] : names;
  }

  private rewardWeights(): number[] {
    const weights = this.rewards.map((reward) => reward.weight ?? 1);
    return this.config.overlong ? [...weights, 1] : weights;
  }

  /** Weighted sum per sample (null when every column is null). */
  private combined(group: Group): (number | null)[] {
    const weights = this.rewardWeights();
    return group.samples.map((sample) => {
      let total: number | null = null;
      sample.rewards.forEach((value, column) => {
        if (value !== null) total = (total ?? 0) + weights[column]! * value;
      });
      return total;
    });
  }

  private async score(groups: Group[], counters: { nonFiniteRewards: number }): Promise<void> {
    const jobs: Promise<void>[] = [];
    for (const group of groups) {
      const { id, prompt, answer, ...metadata } = group.record;
      for (const sample of group.samples) {
        const input = {
          prompt,
          completion: sample.completion.text,
          answer,
          promptId: id,
          finishReason: sample.completion.finishReason,
          completionTokens: sample.completion.tokenIds.length,
          metadata,
        };
        sample.rewards = new Array(this.rewardColumns().length).fill(null);
        this.rewards.forEach((reward, column) => {
          jobs.push(
            Promise.resolve(reward.fn(input)).then((value) => {
              if (value === null) return;
              if (typeof value !== 'number') {
                throw new InvalidArgumentError({
                  parameter: `rewards[${column}] (${reward.name}) result`,
                  functionName: `${FN}.step`,
                  value,
                  expected: 'a number or null',
                });
              }
              if (!Number.isFinite(value)) {
                counters.nonFiniteRewards += 1;
                return;
              }
              sample.rewards[column] = value;
            }),
          );
        });
        if (this.config.overlong) {
          sample.rewards[this.rewards.length] = softOverlongPenalty(
            sample.completion.tokenIds.length,
            this.config.overlong,
          );
        }
      }
    }
    await Promise.all(jobs);
  }

  private async writeRecords(
    record: GrpoMetricRecord,
    kept: Group[],
    advantages: number[],
  ): Promise<void> {
    const outputDir = this.config.outputDir;
    if (outputDir === undefined) return;
    const line = `${JSON.stringify(record)}\n`;
    await appendFile(join(outputDir, 'metrics.jsonl'), line);
    this.files.metricsBytes += Buffer.byteLength(line);
    const every = this.config.logCompletionsEvery;
    if (every > 0 && record.step % every === 0 && kept.length > 0) {
      const columns = this.rewardColumns();
      const combinedAll = kept.flatMap((group) => this.combined(group));
      let index = 0;
      const lines: string[] = [];
      for (const group of kept) {
        for (const sample of group.samples) {
          const row: CompletionRecord = {
            step: record.step,
            promptId: group.record.id,
            prompt: group.record.prompt,
            completion: sample.completion.text,
            reward: combinedAll[index] ?? null,
            rewards: Object.fromEntries(columns.map((name, c) => [name, sample.rewards[c]!])),
            advantage: advantages[index] ?? 0,
            finishReason: sample.completion.finishReason,
            completionTokens: sample.completion.tokenIds.length,
          };
          lines.push(JSON.stringify(row));
          index += 1;
        }
      }
      const text = `${lines.join('\n')}\n`;
      await appendFile(join(outputDir, 'completions.jsonl'), text);
      this.files.completionsBytes += Buffer.byteLength(text);
    }
  }
}

function isNumber(value: number | null): value is number {
  return value !== null;
}

async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

async function cutFile(path: string, bytes: number): Promise<void> {
  if ((await fileSize(path)) === 0 && bytes === 0) {
    await (await open(path, 'a')).close();
    return;
  }
  await truncate(path, bytes);
}

/**
 * Creates a {@link GrpoTrainer}: validates everything, creates the policy trainer (AdamW,
 * schedule, loss settings from the config; a frozen reference only when β > 0) and, with
 * `resume`, restores the newest checkpoint (weights, optimizer, RNG, data position, step, logs
 * cut back to that step) and pushes its weights to the sampler.
 *
 * @example
 * ```ts
 * const grpo = await createGrpoTrainer({
 *   model, sampler, dataset: 'data/train.jsonl',
 *   rewards: [{ name: 'correct', fn: ({ completion, answer }) => (completion.trim() === answer ? 1 : 0) }],
 *   config: { maxSteps: 200, groupSize: 8, promptsPerStep: 16, maxNewTokens: 64, beta: 0,
 *     epsilonHigh: 0.28, dynamicSampling: true, schedule: { learningRate: 1e-5 },
 *     outputDir: 'runs/demo', saveEvery: 20 },
 *   resume: true,
 * });
 * await grpo.train();
 * ```
 * @throws {InvalidArgumentError} naming the bad option; `MODEL_LOAD_FAILED` for an unreadable
 * checkpoint; {@link ShapeMismatchError} when a checkpoint does not fit the model.
 */
export async function createGrpoTrainer(options: GrpoTrainerOptions): Promise<GrpoTrainer> {
  const functionName = 'createGrpoTrainer';
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'options',
      functionName,
      value: options,
      expected: 'an object { model, sampler, dataset, rewards, config }',
    });
  }
  const { model } = options;
  if (model === null || typeof model !== 'object' || !(model.params instanceof Map)) {
    throw new InvalidArgumentError({
      parameter: 'options.model',
      functionName,
      value: model,
      expected: 'a LlamaModel from createLlamaModel()',
    });
  }
  model.assertLive(functionName);
  assertSampler(options.sampler, 'options.sampler');
  const config = resolveGrpoConfig(options.config, functionName);
  const rewards = options.rewards;
  if (!Array.isArray(rewards) || rewards.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.rewards',
      functionName,
      value: rewards,
      expected: 'a non-empty array of { name, fn, weight? }',
    });
  }
  const names = new Set<string>();
  rewards.forEach((reward, index) => {
    if (
      reward === null ||
      typeof reward !== 'object' ||
      typeof reward.name !== 'string' ||
      reward.name === '' ||
      reward.name === 'overlong' ||
      names.has(reward.name) ||
      typeof reward.fn !== 'function' ||
      (reward.weight !== undefined && !Number.isFinite(reward.weight))
    ) {
      throw new InvalidArgumentError({
        parameter: `options.rewards[${index}]`,
        functionName,
        value: reward,
        expected: "{ name (unique, not 'overlong'), fn: function, weight?: finite number }",
      });
    }
    names.add(reward.name);
  });
  const dataset =
    typeof options.dataset === 'string'
      ? await loadPromptDataset(options.dataset)
      : validatePromptRecords(options.dataset, functionName, 'options.dataset');
  if (
    options.tokenizer !== undefined &&
    (options.tokenizer === null || typeof options.tokenizer.encode !== 'function')
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.tokenizer',
      functionName,
      value: options.tokenizer,
      expected: 'an object with encode(text) => number[]',
    });
  }
  const log =
    options.onLog ?? (config.quiet ? () => {} : (message: string) => console.warn(message));

  // Resume: find the checkpoint.
  let checkpointPath: string | undefined;
  if (typeof options.resume === 'string') {
    checkpointPath = options.resume;
  } else if (options.resume === true) {
    if (config.outputDir === undefined) {
      throw new InvalidArgumentError({
        parameter: 'options.resume',
        functionName,
        value: true,
        expected: 'a checkpoint path, or config.outputDir to look for checkpoints in',
      });
    }
    checkpointPath = (await listCheckpoints(join(config.outputDir, 'checkpoints'))).at(-1)?.path;
  } else if (options.resume !== undefined && options.resume !== false) {
    throw new InvalidArgumentError({
      parameter: 'options.resume',
      functionName,
      value: options.resume,
      expected: 'a boolean or a checkpoint path',
    });
  }
  if (config.outputDir !== undefined) {
    await mkdir(config.outputDir, { recursive: true });
    if (checkpointPath === undefined && options.resume === undefined) {
      const existing = await listCheckpoints(join(config.outputDir, 'checkpoints'));
      if (existing.length > 0) {
        throw new InvalidArgumentError({
          parameter: 'config.outputDir',
          functionName,
          value: config.outputDir,
          expected:
            'a folder without checkpoints of another run (pass resume: true to continue it)',
        });
      }
    }
  }
  const loaded = checkpointPath === undefined ? undefined : await loadRunCheckpoint(checkpointPath);
  if (loaded) {
    if (loaded.state.datasetSize !== dataset.length) {
      throw new ShapeMismatchError({
        parameter: 'options.dataset',
        functionName,
        expected: `${loaded.state.datasetSize} records (as in the checkpoint)`,
        actual: `${dataset.length} records`,
      });
    }
    const restored = await createLlamaModel(loaded.model);
    for (const [name, tensor] of model.params) {
      const next = restored.params.get(name);
      if (
        next === undefined ||
        next.shape.length !== tensor.shape.length ||
        next.shape.some((size, axis) => size !== tensor.shape[axis])
      ) {
        restored.dispose();
        throw new ShapeMismatchError({
          parameter: `checkpoint tensor ${name}`,
          functionName,
          expected: `shape [${tensor.shape.join(', ')}] (the model's)`,
          actual: next === undefined ? 'missing' : `[${next.shape.join(', ')}]`,
        });
      }
    }
    model.replaceParams(new Map(restored.params));
  }
  const policy = await createPolicyTrainer(model, {
    schedule: config.schedule ?? { learningRate: 1e-6 },
    ...(config.optimizer === undefined ? {} : { optimizer: config.optimizer }),
    maxGradNorm: config.maxGradNorm ?? 1,
    ...(config.microBatchSize === undefined ? {} : { microBatchSize: config.microBatchSize }),
    onNonFinite: config.onNonFinite,
    grpo: {
      ...(config.ratioLevel === undefined ? {} : { ratioLevel: config.ratioLevel }),
      ...(config.epsilonLow === undefined ? {} : { epsilonLow: config.epsilonLow }),
      ...(config.epsilonHigh === undefined ? {} : { epsilonHigh: config.epsilonHigh }),
      ...(config.dualClip === undefined ? {} : { dualClip: config.dualClip }),
      ...(config.delta === undefined ? {} : { delta: config.delta }),
      klCoefficient: config.beta,
      ...(config.klEstimator === undefined ? {} : { klEstimator: config.klEstimator }),
      ...(config.entropyCoefficient === undefined
        ? {}
        : { entropyCoefficient: config.entropyCoefficient }),
      aggregation: config.lossAggregation,
      ...(config.lossAggregation === 'seq-mean-token-sum-norm'
        ? { normalizer: config.normalizer ?? config.maxNewTokens }
        : {}),
      ...(config.mismatch === undefined ? {} : { mismatch: config.mismatch }),
    },
    ...(loaded?.reference ? { referenceCheckpoint: loaded.reference } : {}),
  });
  let state: RunState;
  if (loaded) {
    policy.setState({ optimizer: loaded.optimizer, skippedSteps: loaded.state.skippedSteps });
    state = loaded.state;
  } else {
    state = {
      format: 'rlvr-grpo-run-v1',
      step: 0,
      skippedSteps: 0,
      rng: createRng(config.seed).derive('sampler').getState(),
      cursor: { epoch: 0, position: 0 },
      files: { metricsBytes: 0, completionsBytes: 0 },
      counters: {},
      initialEntropy: null,
      datasetSize: dataset.length,
    };
  }
  if (config.outputDir !== undefined) {
    await cutFile(join(config.outputDir, 'metrics.jsonl'), state.files.metricsBytes);
    await cutFile(join(config.outputDir, 'completions.jsonl'), state.files.completionsBytes);
  }
  if (loaded) await options.sampler.updateWeights?.(model.toWeightSnapshot(policy.step));
  return new GrpoTrainer({
    policy,
    sampler: options.sampler,
    dataset,
    rewards,
    config,
    tokenizer: options.tokenizer,
    log,
    onStep: options.onStep,
    state,
  });
}
