import type { EnvironmentFactory, MetricRecord, Rng, Sampler, WeightedReward } from '@rlvr/core';
import type { LlamaModel } from '../model/llama-model.js';
import type { PolicyTrainer } from '../train/policy-trainer.js';
import type { InFlight } from './grpo-async.js';
import type { ResolvedGrpoConfig } from './grpo-config.js';
import type { PromptRecord } from './prompt-dataset.js';
import { RUN_STATE_FORMAT, type RunState } from './run-checkpoint.js';

/** One metrics line of a GRPO run (`metrics.jsonl`): core's record plus diagnostics. */
export type GrpoMetricRecord = MetricRecord & {
  /** Human-readable warnings about this step (also sent to `onLog`). */
  diagnostics?: string[];
};

/** Everything a {@link GrpoTrainer} holds, mutable run state included. @internal */
export type RunContext = {
  readonly policy: PolicyTrainer;
  readonly model: LlamaModel;
  readonly sampler: Sampler;
  /** Multi-turn runs: each trajectory's environment (the sampler is a MultiTurnSampler). */
  readonly environment?: EnvironmentFactory;
  readonly dataset: readonly PromptRecord[];
  readonly rewards: readonly WeightedReward[];
  readonly config: ResolvedGrpoConfig;
  readonly tokenizer: { encode(text: string): number[] } | undefined;
  readonly log: (message: string) => void;
  readonly onStep: ((record: GrpoMetricRecord) => void) | undefined;
  /** Reward column names (functions, then `overlong`) and their weights. */
  readonly columns: readonly string[];
  readonly weights: readonly number[];
  /** The settings fingerprinted into every checkpoint. */
  readonly settings: Record<string, unknown>;
  readonly fingerprint: string;
  readonly runId: string;
  readonly started: number;
  rng: Rng;
  cursor: { epoch: number; position: number };
  order: { epoch: number; indices: number[] } | undefined;
  completed: number;
  counters: Record<string, number>;
  initialEntropy: number | null;
  files: { metricsBytes: number; completionsBytes: number };
  lastCheckpointMs: number;
  /** Asynchronous GRPO: requests issued ahead of their step, oldest first (not checkpointed). */
  inflight?: InFlight[];
  /**
   * Asynchronous GRPO: the weight snapshots pushed to the sampler, by their `step` (what a
   * sampler reports as a completion's `policyVersion`): the current one, and for each replaced
   * one the last version (generation steps completed) at which it was current.
   */
  weightHistory?: { current: number; lastCurrent: Map<number, number> };
};

/** The run state saved in a checkpoint. @internal */
export function runState(run: RunContext): RunState {
  // In-flight requests are re-issued on resume: save the state from before the oldest one.
  const base = run.inflight?.[0]?.before;
  return {
    format: RUN_STATE_FORMAT,
    runId: run.runId,
    step: run.completed,
    skippedSteps: run.policy.skippedSteps,
    consecutiveSkips: run.policy.consecutiveSkips,
    rng: base?.rng ?? run.rng.getState(),
    cursor: { ...(base?.cursor ?? run.cursor) },
    files: { ...run.files },
    counters: { ...run.counters },
    initialEntropy: run.initialEntropy,
    datasetSize: run.dataset.length,
    fingerprint: run.fingerprint,
    settings: run.settings,
  };
}
