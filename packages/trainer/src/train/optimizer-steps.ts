import { NonFiniteError } from '@rlvr/core';
import { type GraphStep, graphStep } from '../backend/ort-train-step-kernel.js';
import type { LlamaModel } from '../model/llama-model.js';
import type { NativeAdamW } from '../native/native-steps.js';
import type { AdamW } from '../optim/adamw.js';
import { type LearningRateSchedule, learningRateAt } from '../optim/schedule.js';
import type { TokenBatch } from './batch.js';
import {
  clipAndApply,
  emptyTotals,
  graphLossInputs,
  type LossFunction,
  type MicroBatch,
  membersIn,
  type Ragged,
  scoreMicroBatch,
} from './gradient-engine.js';
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
  grpo: ResolvedGrpoLoss;
  guard: NonFiniteGuard;
};

/**
 * The optimizer steps of a `PolicyTrainer`: accumulated gradients (tfjs or graph runs) then
 * clipping and AdamW, or one onnxruntime train-step graph run; every path applies or skips an
 * update the same way (a non-finite loss or gradient norm skips it and tells the guard) and
 * reports the same metrics. @internal
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

  /**
   * `sftStep` of one micro-batch as one onnxruntime graph (forward, backward, clipping, AdamW;
   * the same math as {@link OptimizerSteps.optimizerStep} with the cross-entropy): a non-finite loss or gradient
   * norm skips the update as there.
   */
  graphSftStep(batch: TokenBatch, tokens: number, functionName: string): GrpoStepMetrics {
    const { optimizer, maxGradNorm } = this.state;
    const started = performance.now();
    const learningRate = this.learningRate;
    const step = graphStep(this.model.config, this.model.params, optimizer as AdamW, batch, {
      learningRate,
      maxGradNorm,
    });
    const { loss, gradNorm } = step;
    const applied = this.finishGraphStep(step, loss, functionName);
    const lossMetrics = { ...EMPTY_LOSS_METRICS, loss, tokens };
    return this.metricsOf(lossMetrics, { learningRate, gradNorm, applied, started });
  }

  /**
   * One GRPO optimizer step whose mini-batch is one micro-batch, as one onnxruntime graph run
   * (the loss gradient from the graph's GRPO head, backward, clipping, AdamW); the loss value and
   * metrics are core's `policyLoss` on the logprobs of that run, and a non-finite one (or a
   * non-finite gradient norm) skips the update as {@link OptimizerSteps.optimizerStep} does.
   */
  graphGrpoStep(
    micro: MicroBatch,
    members: ReadonlySet<number>,
    mask: Ragged,
    lossOf: LossFunction,
    functionName: string,
  ): GrpoStepMetrics {
    const { optimizer, maxGradNorm, guard, grpo } = this.state;
    const started = performance.now();
    const learningRate = this.learningRate;
    const local = membersIn(micro, members);
    const { batch } = micro;
    // `grpoStep` takes this path only for a loss with a GRPO head
    const { grpo: grpoLoss, ...rest } = graphLossInputs(batch, local, lossOf.graph!);
    const step = graphStep(
      this.model.config,
      this.model.params,
      optimizer as AdamW,
      batch,
      { learningRate, maxGradNorm },
      { temperature: grpo.temperature, grpo: grpoLoss!, ...rest },
    );
    const totals = emptyTotals();
    const stats = { logprobs: step.logprobs!, entropy: step.entropy! };
    const scored = guard.guard(
      () => {
        scoreMicroBatch(batch, local, stats, lossOf, mask, totals);
        return true;
      },
      () => false,
      functionName,
    );
    if (!scored) {
      step.discard();
      return this.skipped(started);
    }
    const applied = this.finishGraphStep(step, totals.loss, functionName);
    const { gradNorm } = step;
    return this.metricsOf(lossMetricsOf(totals), { learningRate, gradNorm, applied, started });
  }

  /**
   * Swaps a graph step's new weights in (moments into AdamW) when `loss` and its gradient norm are
   * finite, else frees them; tells the non-finite guard. Returns whether it was applied.
   */
  private finishGraphStep(step: GraphStep, loss: number, functionName: string): boolean {
    const applied = Number.isFinite(loss) && Number.isFinite(step.gradNorm);
    if (applied) this.model.replaceParams(step.commit());
    else step.discard();
    this.settle(applied, loss, step.gradNorm, functionName);
    return applied;
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
