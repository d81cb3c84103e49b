import { join } from 'node:path';
import { createRng, InvalidArgumentError, throwIfAborted } from '@rlvr/core';
import cliProgress from 'cli-progress';
import type { LlamaModel } from '../model/llama-model.js';
import type { PolicyTrainer } from '../train/policy-trainer.js';
import { computeAdvantages } from './grpo-advantages.js';
import {
  asyncMetrics,
  asyncSource,
  discardInflight,
  notePush,
  restartPoint,
  rewindInflight,
} from './grpo-async.js';
import type { ResolvedGrpoConfig } from './grpo-config.js';
import { completionRows, stepMetrics } from './grpo-metrics.js';
import { collectGroups } from './grpo-sampling.js';
import { type TrainOutcome, trainOnGroups } from './grpo-update.js';
import { saveRunCheckpoint } from './run-checkpoint.js';
import { type GrpoMetricRecord, type RunContext, runState } from './run-context.js';
import { appendLog, CHECKPOINTS_DIR, COMPLETIONS_FILE, METRICS_FILE } from './run-files.js';

export type { GrpoMetricRecord } from './run-context.js';

/** Result of {@link GrpoTrainer.train}. */
export type GrpoTrainResult = {
  /** Generation steps completed in total (including those before a resume). */
  steps: number;
  /** The last metrics record written, if any. */
  last: GrpoMetricRecord | undefined;
};

/** Pushes the new weights to the sampler when an update was applied (and sync is on). */
async function pushWeights(run: RunContext, outcome: TrainOutcome): Promise<number> {
  if (!run.config.syncWeights || !outcome.updates.some((update) => !update.skipped)) return 0;
  const started = performance.now();
  await run.sampler.updateWeights!(run.model.toWeightSnapshot(run.policy.step));
  notePush(run, run.policy.step);
  return performance.now() - started;
}

/** Appends the step's metrics line and, when due, its completions rows. */
async function writeRecords(
  run: RunContext,
  record: GrpoMetricRecord,
  rows: () => object[],
): Promise<void> {
  const outputDir = run.config.outputDir;
  if (outputDir === undefined) return;
  run.files.metricsBytes += await appendLog(outputDir, METRICS_FILE, `${JSON.stringify(record)}\n`);
  const every = run.config.logCompletionsEvery;
  if (every > 0 && record.step % every === 0) {
    const lines = rows().map((row) => JSON.stringify(row));
    if (lines.length > 0) {
      run.files.completionsBytes += await appendLog(
        outputDir,
        COMPLETIONS_FILE,
        `${lines.join('\n')}\n`,
      );
    }
  }
}

async function saveCheckpointOf(run: RunContext): Promise<string> {
  const outputDir = run.config.outputDir;
  if (outputDir === undefined) {
    throw new InvalidArgumentError({
      parameter: 'config.outputDir',
      functionName: 'GrpoTrainer.saveCheckpoint',
      value: undefined,
      expected: 'a folder to write checkpoints to',
    });
  }
  const started = performance.now();
  const adapter = run.model.toLoraAdapter();
  const path = await saveRunCheckpoint(
    join(outputDir, CHECKPOINTS_DIR),
    {
      // LoRA: the adapter only (the base is the run's model, unchanged; the reference is the base)
      ...(adapter ? { adapter } : { model: run.model.toCheckpoint() }),
      ...(run.policy.reference && !adapter
        ? { reference: run.policy.reference.toCheckpoint() }
        : {}),
      optimizer: run.policy.getState().optimizer,
      state: runState(run),
    },
    run.config.keepLast,
  );
  run.lastCheckpointMs = performance.now() - started;
  return path;
}

function progressBar(config: ResolvedGrpoConfig): cliProgress.SingleBar | undefined {
  const show =
    !config.quiet && (config.progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI));
  if (!show) return undefined;
  return new cliProgress.SingleBar(
    {
      format:
        'GRPO {bar} {value}/{total} | reward {reward} | loss {loss} | {stepSeconds}s/step | ETA {eta_formatted}',
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
}

/**
 * The GRPO loop: sample G completions per prompt from a `Sampler`, score them with reward
 * functions, compute group advantages (with @rlvr/core), train with {@link PolicyTrainer.grpoStep}
 * at the sampling temperature, push the new weights to the sampler, log metrics and completions
 * as JSONL, checkpoint atomically, resume exactly. Create it with {@link createGrpoTrainer}.
 */
export class GrpoTrainer {
  /** The policy trainer (optimizer, loss settings). */
  readonly policy: PolicyTrainer;
  /** The trained model. */
  readonly model: LlamaModel;
  /** Settings with defaults applied. */
  readonly config: ResolvedGrpoConfig;
  /** Identifies this run in its checkpoints (kept across resumes). */
  readonly runId: string;
  readonly #run: RunContext;

  /** @internal use {@link createGrpoTrainer}. */
  constructor(context: unknown) {
    const run = context as RunContext;
    this.#run = run;
    this.policy = run.policy;
    this.model = run.model;
    this.config = run.config;
    this.runId = run.runId;
  }

  /** Generation steps completed (including those before a resume). */
  get completedSteps(): number {
    return this.#run.completed;
  }

  /**
   * Runs steps until `config.maxSteps`, checkpointing every `saveEvery` steps and at the end.
   * An aborted `signal` stops with an `AbortedError` (see {@link GrpoTrainer.step}); the newest
   * checkpoint then resumes the run exactly.
   *
   * @example
   * ```ts
   * const grpo = await createGrpoTrainer({ model, sampler, dataset, rewards, config });
   * const { steps, last } = await grpo.train();
   * ```
   * @throws `ABORTED` on abort; `TRAINING_STALLED` after `maxConsecutiveSkips` skipped updates.
   */
  async train(options?: { signal?: AbortSignal }): Promise<GrpoTrainResult> {
    const signal = options?.signal;
    const run = this.#run;
    const bar = progressBar(run.config);
    bar?.start(run.config.maxSteps, run.completed, { reward: '-', loss: '-', stepSeconds: '-' });
    let last: GrpoMetricRecord | undefined;
    try {
      while (run.completed < run.config.maxSteps) {
        throwIfAborted(signal, 'GrpoTrainer.train()');
        last = await this.step(signal ? { signal } : undefined);
        bar?.update(run.completed, {
          reward: (last.metrics['reward/mean'] ?? 0).toFixed(3),
          loss: (last.metrics.loss ?? 0).toExponential(2),
          stepSeconds: ((last.metrics['time/step_ms'] ?? 0) / 1000).toFixed(2),
        });
      }
    } catch (error) {
      rewindInflight(run); // an abort between steps: the next call re-issues the same requests
      throw error;
    } finally {
      bar?.stop();
    }
    return { steps: run.completed, last };
  }

  /**
   * One generation step: sample, score, advantages, `grpoStep`, weight push, metrics, and a
   * checkpoint when due; `onStep` last.
   *
   * **Abort.** `signal` is checked between phases up to the optimizer update. An abort (or any
   * error) before it leaves no trace: no metrics, completions rows, weight push or checkpoint,
   * and the data position and RNG are restored, so calling `step()` again repeats the same
   * requests. Once the update is applied the step completes (push, records, checkpoint) so the
   * model, the sampler and the files stay consistent; `train()` then stops before the next step.
   * @throws {ShapeMismatchError} when the sampler breaks its contract (wrong number of groups or
   * completions, logprobs not one per token); `ABORTED`; `TRAINING_STALLED`.
   */
  async step(options?: { signal?: AbortSignal }): Promise<GrpoMetricRecord> {
    const run = this.#run;
    const signal = options?.signal;
    const started = performance.now();
    const stepNumber = run.completed + 1;
    const asynchronous = run.config.maxStaleness > 0;
    const before = restartPoint(run) ?? { rng: run.rng.getState(), cursor: { ...run.cursor } };
    let collected: Awaited<ReturnType<typeof collectGroups>>;
    let advantages: number[];
    let outcome: TrainOutcome;
    try {
      throwIfAborted(signal, 'GrpoTrainer.step()');
      collected = asynchronous
        ? await collectGroups(
            run,
            signal,
            asyncSource(run, stepNumber, Math.max(stepNumber, run.config.maxSteps)),
          )
        : await collectGroups(run, signal);
      advantages = computeAdvantages(collected.kept, run.columns.length, run.weights, run.config);
      outcome = trainOnGroups(run, collected.kept, advantages, signal);
    } catch (error) {
      discardInflight(run);
      run.rng = createRng(before.rng);
      run.cursor = before.cursor;
      throw error;
    }
    const syncMs = await pushWeights(run, outcome);
    const { metrics, diagnostics } = stepMetrics(run, stepNumber, collected, outcome, {
      syncMs,
      started,
    });
    if (asynchronous) Object.assign(metrics, asyncMetrics(run, collected));
    run.completed = stepNumber;
    const record: GrpoMetricRecord = {
      step: stepNumber,
      elapsedMs: performance.now() - run.started,
      phase: 'train',
      metrics,
      ...(diagnostics.length > 0 ? { diagnostics } : {}),
    };
    for (const message of diagnostics) run.log(`[grpo step ${stepNumber}] ${message}`);
    await writeRecords(run, record, () =>
      completionRows(run, stepNumber, collected.kept, advantages),
    );
    const { outputDir, saveEvery, maxSteps } = run.config;
    if (outputDir !== undefined && (stepNumber % saveEvery === 0 || stepNumber === maxSteps)) {
      await saveCheckpointOf(run);
    }
    run.onStep?.(record);
    return record;
  }

  /**
   * Writes a checkpoint of the run now (model, reference, optimizer, RNG, data position, step,
   * log offsets, run id, settings fingerprint) under `outputDir/checkpoints`, atomically; keeps
   * the newest `keepLast` of this run.
   * @throws {InvalidArgumentError} without `config.outputDir`.
   */
  async saveCheckpoint(): Promise<string> {
    return saveCheckpointOf(this.#run);
  }

  /** Frees the policy trainer's optimizer state and reference model (not the model). */
  dispose(): void {
    discardInflight(this.#run);
    this.#run.policy.dispose();
  }
}
