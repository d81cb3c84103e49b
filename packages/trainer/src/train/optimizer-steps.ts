import { NonFiniteError } from '@rlvr/core';
import type { LlamaModel } from '../model/llama-model.js';
import type { AdamW } from '../optim/adamw.js';
import { type LearningRateSchedule, learningRateAt } from '../optim/schedule.js';
import { clipAndApply } from './gradient-engine.js';
import type { StepMemory } from './memory-plan.js';
import type { NativeAdamW } from './native-steps.js';
import type { NonFiniteGuard } from './non-finite-guard.js';
import { type Accumulated, EMPTY_LOSS_METRICS, lossMetricsOf } from './step-metrics.js';
import type { ResolvedGrpoLoss } from './trainer-options.js';
import type { GrpoStepMetrics, OptimizerStepMetrics } from './trainer-types.js';

/** What a trainer's optimizer steps share: the optimizer, its schedule and the non-finite guard. */
export type StepState = {
  optimizer: AdamW | NativeAdamW;
  schedule: LearningRateSchedule;
  maxGradNorm: number;
  microBatchSize: number;
  /** The token budget of a micro-batch (`microBatchTokens`; the memory plan's on native). */
  microBatchTokens: number | undefined;
  /** The native engine's memory decisions (budgets, checkpointing per micro-batch). */
  memory?: StepMemory;
  grpo: ResolvedGrpoLoss;
  guard: NonFiniteGuard;
};

/**
 * The optimizer steps of a `PolicyTrainer`: accumulated gradients (tfjs, or the native engine's
 * runs into its store) then clipping and AdamW; a non-finite loss or gradient norm skips the
 * update and tells the guard, and every path reports the same metrics. @internal
 */
export class OptimizerSteps {
  constructor(
    private readonly model: LlamaModel,
    readonly state: StepState,
  ) {}

  /** The learning rate the next optimizer step will use. */
  get learningRate(): number {
    return learningRateAt(this.state.schedule, this.state.optimizer.step);
  }

  /** Accumulates gradients with `accumulate`, then clips and updates (or skips). */
  optimizerStep(accumulate: () => Accumulated, functionName: string): GrpoStepMetrics {
    const { optimizer, guard, maxGradNorm } = this.state;
    const started = performance.now();
    const accumulated = guard.guard(accumulate, () => undefined, functionName);
    if (accumulated === undefined) return this.skipped(started);
    const learningRate = this.learningRate;
    const { loss } = accumulated;
    const { gradNorm, applied } = clipAndApply(this.model, optimizer, accumulated.grads, {
      loss,
      learningRate,
      maxGradNorm,
    });
    this.settle(applied, loss, gradNorm, functionName);
    return this.metricsOf(lossMetricsOf(accumulated), { learningRate, gradNorm, applied, started });
  }

  /** An optimizer step's metrics from its loss metrics and outcome. */
  private metricsOf(
    lossMetrics: ReturnType<typeof lossMetricsOf>,
    outcome: { learningRate: number; gradNorm: number; applied: boolean; started: number },
  ): GrpoStepMetrics {
    return {
      ...lossMetrics,
      step: this.state.optimizer.step,
      learningRate: outcome.learningRate,
      gradNorm: outcome.gradNorm,
      skipped: !outcome.applied,
      timeMs: performance.now() - outcome.started,
    };
  }

  /** Tells the non-finite guard whether the update was applied (a skip may throw or stall). */
  private settle(applied: boolean, loss: number, gradNorm: number, functionName: string): void {
    const { guard } = this.state;
    if (applied) {
      guard.applied();
      return;
    }
    const lossFinite = Number.isFinite(loss);
    guard.skip(
      new NonFiniteError({
        parameter: lossFinite ? 'gradients' : 'loss',
        functionName,
        index: 0,
        value: lossFinite ? gradNorm : loss,
      }),
      functionName,
    );
  }

  /** The metrics of a skipped update. */
  skipped(started: number): GrpoStepMetrics {
    return {
      ...EMPTY_LOSS_METRICS,
      step: this.state.optimizer.step,
      loss: Number.NaN,
      learningRate: this.learningRate,
      gradNorm: Number.NaN,
      skipped: true,
      timeMs: performance.now() - started,
    };
  }
}

/** The fields of a step's metrics that every trainer step reports. */
export function optimizerMetrics(metrics: GrpoStepMetrics): OptimizerStepMetrics {
  const { step, loss, learningRate, gradNorm, skipped, tokens, timeMs } = metrics;
  return { step, loss, learningRate, gradNorm, skipped, tokens, timeMs };
}
