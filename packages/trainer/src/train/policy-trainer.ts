import {
  aggregationWeights,
  ErrorCode,
  InvalidArgumentError,
  type KlEstimator,
  type LossAggregation,
  type MismatchMetrics,
  type MismatchMode,
  mismatchCorrection,
  NonFiniteError,
  type PolicyLossMetrics,
  policyLoss,
  type RatioLevel,
  RlvrError,
  ShapeMismatchError,
  validateFiniteArray,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
  validateRagged,
} from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { createLlamaModel, type LlamaModel } from '../model/llama-model.js';
import { logitsGradient, tokenStats } from '../model/token-stats.js';
import { AdamW, type AdamWOptions, type AdamWState } from '../optim/adamw.js';
import { type LearningRateSchedule, learningRateAt, validateSchedule } from '../optim/schedule.js';
import { buildTokenBatch, type TokenBatch, type TokenSequence } from './batch.js';

/** The GRPO/PPO loss settings (the fields of @rlvr/core's `policyLoss`, TRL names in brackets). */
export type GrpoLossConfig = {
  /** Default `token`; `sequence` is GSPO. */
  ratioLevel?: RatioLevel;
  /** ε_low (default 0.2) [`epsilon`]. */
  epsilonLow?: number;
  /** ε_high (default ε_low; DAPO 0.28) [`epsilon_high`]. */
  epsilonHigh?: number;
  /** Dual-clip constant c > 1. */
  dualClip?: number;
  /** Two-sided clip δ > 1 + ε_high [`delta`]. */
  delta?: number;
  /** β (default 0: no reference model is created) [`beta`]. */
  klCoefficient?: number;
  /** Default `k3`. */
  klEstimator?: KlEstimator;
  /** η: entropy bonus weight (default 0). */
  entropyCoefficient?: number;
  /** Default `seq-mean-token-mean` [`loss_type`]. */
  aggregation?: LossAggregation;
  /** Constant normalizer of `seq-mean-token-sum-norm` (e.g. maxNewTokens). */
  normalizer?: number;
  /**
   * Rollout↔trainer mismatch correction (TRL `vllm_importance_sampling_*`); needs
   * `behaviourLogprobs` in the batch. Default: off.
   */
  mismatch?: { mode?: MismatchMode; cap?: number; lowerThreshold?: number };
};

/** Options of {@link createPolicyTrainer}. */
export type PolicyTrainerOptions = {
  /** Learning rate and its schedule (default: constant 1e-5, no warm-up). */
  schedule?: LearningRateSchedule;
  /** AdamW settings. */
  optimizer?: AdamWOptions;
  /** Clip gradients to this global L2 norm (default 1; 0 disables clipping). */
  maxGradNorm?: number;
  /** Sequences per forward/backward pass; gradients accumulate (default: all at once). */
  microBatchSize?: number;
  /** NaN/Inf loss or gradients: throw (`error`, default) or skip the update and count it (`skip`). */
  onNonFinite?: 'error' | 'skip';
  /** GRPO loss settings. */
  grpo?: GrpoLossConfig;
  /**
   * Weights of the frozen reference policy when `grpo.klCoefficient` > 0 (default: a copy of the
   * model's current weights). Pass the saved reference when resuming a run.
   */
  referenceCheckpoint?: Checkpoint;
};

/** One generation batch for {@link PolicyTrainer.grpoStep}. */
export type GrpoBatch = {
  /** Prompt + completion token ids per rollout. */
  sequences: readonly TokenSequence[];
  /** One advantage per sequence (e.g. from @rlvr/core's `groupAdvantages`). */
  advantages: readonly number[];
  /** Per completion token: 1 = trained on, 0 = masked (e.g. truncated completions). Default 1. */
  mask?: readonly (readonly number[])[];
  /** Logprobs reported by the sampler (needed for the mismatch correction). */
  behaviourLogprobs?: readonly (readonly number[])[];
};

/** Options of one {@link PolicyTrainer.grpoStep} call. */
export type GrpoStepOptions = {
  /** μ: passes over the batch (PPO epochs), with the pre-update logprobs kept as π_old. Default 1. */
  numIterations?: number;
  /** Sequences per optimizer step (default: the whole batch: one step per iteration). */
  miniBatchSize?: number;
};

/** Metrics of one optimizer step. */
export type OptimizerStepMetrics = {
  /** Optimizer step index after this update (1-based). */
  step: number;
  loss: number;
  learningRate: number;
  /** Global gradient L2 norm before clipping. */
  gradNorm: number;
  /** True when the update was skipped because of a non-finite loss or gradient. */
  skipped: boolean;
  /** Loss-carrying tokens. */
  tokens: number;
  /** Wall time of forward + backward + update, ms. */
  timeMs: number;
};

/** Metrics of one GRPO optimizer step: {@link OptimizerStepMetrics} plus core's loss metrics. */
export type GrpoStepMetrics = OptimizerStepMetrics &
  Omit<PolicyLossMetrics, 'tokens'> & {
    /** The policy-gradient part of the loss (without KL and entropy). */
    policyLoss: number;
    /** Mismatch metrics of the trainer vs the sampler (when the correction is on). */
    mismatch?: MismatchMetrics;
  };

/** Result of {@link PolicyTrainer.grpoStep}: one entry per optimizer step taken. */
export type GrpoStepResult = { steps: GrpoStepMetrics[] };

/** Result of {@link PolicyTrainer.sftStep}. */
export type SftStepResult = OptimizerStepMetrics;

/** Options of {@link PolicyTrainer.sftStep}. */
export type SftStepOptions = {
  /** Pack several short sequences per row (segment-masked attention); default false. */
  pack?: boolean;
  /** Row length when packing (default: the longest sequence). */
  rowLength?: number;
};

/**
 * One completion token handed to a {@link LogitsLossFunction}: the student's logits row that
 * predicts it.
 */
export type LogitsRow = {
  /** Index of the sequence in the `sequences` argument of {@link PolicyTrainer.logitsStep}. */
  sequence: number;
  /** Index of the token within that sequence's `completionIds`. */
  index: number;
  /** The completion token id (the token these logits predict). */
  target: number;
  /** The student's logits (vocab-sized, float32; a view valid only during the call). */
  logits: Float32Array;
};

/** Global counts of one {@link PolicyTrainer.logitsStep} call, the same for every micro-batch. */
export type LogitsLossContext = {
  /** Logits row length. */
  vocabSize: number;
  /** Completion tokens over all sequences of the step (the token-mean normalizer). */
  totalTokens: number;
  /** Sequences in the step. */
  totalSequences: number;
};

/**
 * A loss on the student's full logits at completion positions, called once per micro-batch with
 * that micro-batch's rows (in sequence, then token order). Returns the micro-batch's loss
 * contribution (the step's loss is the sum over micro-batches) and, per row, d loss / d logits
 * (vocab-sized). Normalize with `context.totalTokens` for a split-invariant token mean.
 */
export type LogitsLossFunction = (
  rows: readonly LogitsRow[],
  context: LogitsLossContext,
) => { loss: number; dLogits: readonly (Float32Array | Float64Array | readonly number[])[] };

/** Options of {@link PolicyTrainer.logitsStep} (as {@link SftStepOptions}). */
export type LogitsStepOptions = SftStepOptions;

/** Result of {@link PolicyTrainer.logitsStep}. */
export type LogitsStepResult = OptimizerStepMetrics;

/** Trainer state as plain data (for exact resume). */
export type PolicyTrainerState = { optimizer: AdamWState; skippedSteps: number };

type Ragged = number[][];

/** @internal */
export type MicroBatch = { indices: number[]; batch: TokenBatch };

/** Per micro-batch: the loss and d loss / d logprob (and / d entropy) per token. @internal */
export type LossFunction = (
  rows: number[],
  logprobs: Ragged,
  entropies: Ragged,
) => {
  loss: number;
  gradLogprobs: Ragged;
  gradEntropy: Ragged | undefined;
  result: ReturnType<typeof policyLoss> | undefined;
};

type MetricSums = {
  clipRatioLow: number;
  clipRatioHigh: number;
  clipRatioRegion: number;
  clipFraction: number;
  dualClipFraction: number;
  approxKl: number;
  kl: number;
  entropy: number;
  ratioMean: number;
};

const EMPTY_METRICS = {
  policyLoss: 0,
  tokens: 0,
  clipRatioLow: 0,
  clipRatioHigh: 0,
  clipRatioRegion: 0,
  clipFraction: 0,
  dualClipFraction: 0,
  approxKl: 0,
  kl: 0,
  entropy: 0,
  ratioMean: 1,
  ratioMin: 1,
  ratioMax: 1,
};

/** @internal */
export type Accumulated = {
  grads: Map<string, tf.Tensor>;
  loss: number;
  policyOnly: number;
  sums: MetricSums;
  ratioMin: number;
  ratioMax: number;
  tokens: number;
};

/**
 * Trains a {@link LlamaModel} with GRPO (and SFT): the loss and its per-token gradient come from
 * @rlvr/core's float64 `policyLoss` on the logprobs the tfjs model computes, the chain rule goes
 * through the model's hand-written backward pass, then global-norm clipping and AdamW.
 * Micro-batches accumulate gradients with the *global* token/sequence counts, so the update does
 * not depend on the micro-batch split.
 */
export class PolicyTrainer {
  /** The trained model. */
  readonly model: LlamaModel;
  /** Frozen reference model (only when `klCoefficient` > 0). */
  readonly reference: LlamaModel | undefined;
  /** Updates skipped because of non-finite values (with `onNonFinite: 'skip'`). */
  skippedSteps = 0;
  private readonly optimizer: AdamW;
  private readonly schedule: LearningRateSchedule;
  private readonly maxGradNorm: number;
  private readonly microBatchSize: number;
  private readonly onNonFinite: 'error' | 'skip';
  private readonly grpo: Required<
    Pick<
      GrpoLossConfig,
      | 'ratioLevel'
      | 'epsilonLow'
      | 'epsilonHigh'
      | 'klCoefficient'
      | 'klEstimator'
      | 'entropyCoefficient'
      | 'aggregation'
    >
  > &
    GrpoLossConfig;

  /** @internal use {@link createPolicyTrainer}. */
  constructor(
    model: LlamaModel,
    reference: LlamaModel | undefined,
    settings: {
      optimizer: AdamW;
      schedule: LearningRateSchedule;
      maxGradNorm: number;
      microBatchSize: number;
      onNonFinite: 'error' | 'skip';
      grpo: PolicyTrainer['grpo'];
    },
  ) {
    this.model = model;
    this.reference = reference;
    this.optimizer = settings.optimizer;
    this.schedule = settings.schedule;
    this.maxGradNorm = settings.maxGradNorm;
    this.microBatchSize = settings.microBatchSize;
    this.onNonFinite = settings.onNonFinite;
    this.grpo = settings.grpo;
  }

  /** Optimizer steps taken so far. */
  get step(): number {
    return this.optimizer.step;
  }

  /** The learning rate the next optimizer step will use. */
  get learningRate(): number {
    return learningRateAt(this.schedule, this.optimizer.step);
  }

  /**
   * Per-token logprobs (and entropies, nats) of each sequence's completion tokens under the
   * current model, without building a backward pass.
   *
   * @example
   * ```ts
   * const { logprobs } = trainer.completionLogprobs([{ promptIds: [1, 2], completionIds: [3, 4] }]);
   * ```
   */
  completionLogprobs(sequences: readonly TokenSequence[]): { logprobs: Ragged; entropies: Ragged } {
    this.model.assertLive('completionLogprobs');
    return this.logprobsOf(this.model, sequences, 'PolicyTrainer.completionLogprobs');
  }

  /**
   * One GRPO update on a generation batch: optional mismatch correction against the sampler's
   * logprobs, μ = `numIterations` passes with the pre-update logprobs as π_old, one optimizer step
   * per mini-batch, gradient accumulation over micro-batches.
   *
   * @example
   * ```ts
   * const { steps } = trainer.grpoStep({
   *   sequences: rollouts.map((r) => ({ promptIds: r.promptTokenIds, completionIds: r.tokenIds })),
   *   advantages, behaviourLogprobs: rollouts.map((r) => r.logprobs),
   * });
   * console.log(steps[0].loss, steps[0].clipRatioRegion);
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} for bad
   * input; {@link NonFiniteError} for a non-finite loss or gradient unless `onNonFinite: 'skip'`.
   */
  grpoStep(batch: GrpoBatch, options?: GrpoStepOptions): GrpoStepResult {
    const functionName = 'PolicyTrainer.grpoStep';
    this.model.assertLive('grpoStep');
    const opts = validateOptions<GrpoStepOptions>(options, { parameter: 'options', functionName });
    if (batch === null || typeof batch !== 'object') {
      throw new InvalidArgumentError({
        parameter: 'batch',
        functionName,
        value: batch,
        expected: 'a GrpoBatch { sequences, advantages }',
      });
    }
    const { sequences } = batch;
    const numIterations = validateInteger(opts.numIterations ?? 1, {
      parameter: 'options.numIterations',
      functionName,
      min: 1,
    });
    const count = Array.isArray(sequences) ? sequences.length : 0;
    const miniBatchSize = validateInteger(opts.miniBatchSize ?? Math.max(count, 1), {
      parameter: 'options.miniBatchSize',
      functionName,
      min: 1,
    });
    const micro = this.microBatches(sequences, functionName);
    const completionShape = sequences.map((sequence) => sequence.completionIds as number[]);
    const advantages = validateFiniteArray(batch.advantages, {
      parameter: 'batch.advantages',
      functionName,
      length: count,
    });
    const inputMask: Ragged =
      batch.mask === undefined
        ? completionShape.map((row) => new Array<number>(row.length).fill(1))
        : (validateRagged(batch.mask, {
            parameter: 'batch.mask',
            functionName,
            shapeOf: completionShape,
            shapeName: 'completionIds',
          }).map((row) => Array.from(row)) as Ragged);
    const config = this.grpo;
    if (config.mismatch && batch.behaviourLogprobs === undefined) {
      throw new InvalidArgumentError({
        parameter: 'batch.behaviourLogprobs',
        functionName,
        value: undefined,
        expected: 'the sampler logprobs when the mismatch correction is configured',
      });
    }
    const behaviour =
      batch.behaviourLogprobs === undefined
        ? undefined
        : validateRagged(batch.behaviourLogprobs, {
            parameter: 'batch.behaviourLogprobs',
            functionName,
            shapeOf: completionShape,
            shapeName: 'completionIds',
          });

    const needOld = numIterations > 1 || miniBatchSize < count || config.mismatch !== undefined;
    const old = needOld ? this.logprobsOfMicro(this.model, micro, count).logprobs : undefined;
    const reference =
      this.reference === undefined
        ? undefined
        : this.logprobsOfMicro(this.reference, micro, count).logprobs;
    let mask = inputMask;
    let importanceWeights: Ragged | undefined;
    let mismatchMetrics: MismatchMetrics | undefined;
    if (config.mismatch && behaviour && old) {
      const correction = mismatchCorrection({
        trainerLogprobs: old,
        behaviourLogprobs: behaviour,
        mask: inputMask,
        ...config.mismatch,
      });
      mask = correction.mask;
      importanceWeights = correction.weights;
      mismatchMetrics = correction.metrics;
    }

    const steps: GrpoStepMetrics[] = [];
    for (let iteration = 0; iteration < numIterations; iteration++) {
      for (let start = 0; start < count; start += miniBatchSize) {
        const members = new Set<number>();
        for (let index = start; index < Math.min(count, start + miniBatchSize); index++) {
          members.add(index);
        }
        const metrics = this.optimizerStep(micro, members, mask, (rows, current, entropies) => {
          const pick = <T>(all: T[] | undefined) => all && rows.map((row) => all[row]!);
          const rowMask = pick(mask)!;
          const result = policyLoss({
            logprobs: current,
            oldLogprobs: pick(old) ?? current,
            advantages: rows.map((row) => advantages[row]!),
            mask: rowMask,
            ratioLevel: config.ratioLevel,
            epsilonLow: config.epsilonLow,
            epsilonHigh: config.epsilonHigh,
            dualClip: config.dualClip,
            delta: config.delta,
            refLogprobs: pick(reference),
            klCoefficient: config.klCoefficient,
            klEstimator: config.klEstimator,
            entropies,
            entropyCoefficient: config.entropyCoefficient,
            importanceWeights: pick(importanceWeights),
            aggregation: config.aggregation,
            aggregationOptions: this.globalCounts(mask, members),
          });
          let gradEntropy: Ragged | undefined;
          if (config.entropyCoefficient !== 0) {
            const weights = aggregationWeights(
              rowMask,
              config.aggregation,
              this.globalCounts(mask, members),
            );
            gradEntropy = weights.map((row) => row.map((w) => -config.entropyCoefficient * w));
          }
          return { loss: result.loss, gradLogprobs: result.gradLogprobs, gradEntropy, result };
        });
        steps.push({ ...metrics, ...(mismatchMetrics ? { mismatch: mismatchMetrics } : {}) });
      }
    }
    return { steps };
  }

  /**
   * One supervised step: token-mean cross-entropy on the completion tokens only (prompt tokens
   * carry no loss), optionally packing several sequences per row.
   *
   * @example
   * ```ts
   * trainer.sftStep([{ promptIds: [1, 7, 8], completionIds: [9, 2] }], { pack: true });
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for bad input.
   */
  sftStep(sequences: readonly TokenSequence[], options?: SftStepOptions): SftStepResult {
    const functionName = 'PolicyTrainer.sftStep';
    this.model.assertLive('sftStep');
    const opts = validateOptions<SftStepOptions>(options, { parameter: 'options', functionName });
    const micro = this.microBatches(sequences, functionName, opts);
    const mask: Ragged = sequences.map((sequence) =>
      new Array<number>(sequence.completionIds.length).fill(1),
    );
    const members = new Set(sequences.map((_, index) => index));
    const tokenCount = mask.reduce((sum, row) => sum + row.length, 0);
    if (tokenCount === 0) {
      throw new InvalidArgumentError({
        parameter: 'sequences',
        functionName,
        value: sequences,
        expected: 'at least one completion token to train on',
      });
    }
    const metrics = this.optimizerStep(micro, members, mask, (_rows, current) => {
      let loss = 0;
      const gradLogprobs = current.map((row) =>
        row.map((logprob) => {
          loss -= logprob / tokenCount;
          return -1 / tokenCount;
        }),
      );
      return { loss, gradLogprobs, gradEntropy: undefined, result: undefined };
    });
    const { step, loss, learningRate, gradNorm, skipped, tokens, timeMs } = metrics;
    return { step, loss, learningRate, gradNorm, skipped, tokens, timeMs };
  }

  /**
   * One optimizer step on a loss defined on the student's full logits at the completion positions
   * (logit distillation, custom objectives): per micro-batch, `lossOf` gets each completion
   * token's logits row and returns the loss and d loss / d logits; the trainer back-propagates
   * through the model, accumulates over micro-batches, clips and applies AdamW, as `sftStep`.
   * With `dLogits = (softmax − onehot(target)) / totalTokens` it is exactly `sftStep`.
   *
   * @example
   * ```ts
   * // forward KL to a teacher distribution q (token mean)
   * trainer.logitsStep(sequences, (rows, { totalTokens }) => {
   *   let loss = 0;
   *   const dLogits = rows.map((row) => {
   *     const p = softmax(row.logits);
   *     const q = teacherProbs(row.sequence, row.index);
   *     loss += klDivergence(q, p) / totalTokens;
   *     return p.map((pv, v) => (pv - q[v]!) / totalTokens);
   *   });
   *   return { loss, dLogits };
   * });
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for bad input or a `dLogits` of
   * the wrong shape; {@link NonFiniteError} for a non-finite loss, d logits or gradient unless
   * `onNonFinite: 'skip'`.
   */
  logitsStep(
    sequences: readonly TokenSequence[],
    lossOf: LogitsLossFunction,
    options?: LogitsStepOptions,
  ): LogitsStepResult {
    const functionName = 'PolicyTrainer.logitsStep';
    this.model.assertLive('logitsStep');
    if (typeof lossOf !== 'function') {
      throw new InvalidArgumentError({
        parameter: 'lossOf',
        functionName,
        value: lossOf,
        expected: 'a function (rows, context) => { loss, dLogits }',
      });
    }
    const opts = validateOptions<LogitsStepOptions>(options, {
      parameter: 'options',
      functionName,
    });
    const micro = this.microBatches(sequences, functionName, opts);
    const started = performance.now();
    let accumulated: Accumulated;
    try {
      accumulated = this.logitsGradients(micro, sequences, lossOf, functionName);
    } catch (error) {
      if (this.onNonFinite === 'skip' && NonFiniteError.isInstance(error)) {
        this.skippedSteps += 1;
        return {
          step: this.optimizer.step,
          loss: Number.NaN,
          learningRate: this.learningRate,
          gradNorm: Number.NaN,
          skipped: true,
          tokens: 0,
          timeMs: performance.now() - started,
        };
      }
      throw error;
    }
    const metrics = this.applyGradients(accumulated, started);
    const { step, loss, learningRate, gradNorm, skipped, tokens, timeMs } = metrics;
    return { step, loss, learningRate, gradNorm, skipped, tokens, timeMs };
  }

  /** Gradients of a {@link LogitsLossFunction} over all micro-batches (caller disposes). @internal */
  logitsGradients(
    micro: MicroBatch[],
    sequences: readonly TokenSequence[],
    lossOf: LogitsLossFunction,
    functionName: string,
  ): Accumulated {
    const vocabSize = this.model.config.vocab_size;
    const totalTokens = sequences.reduce((sum, s) => sum + s.completionIds.length, 0);
    if (totalTokens === 0) {
      throw new InvalidArgumentError({
        parameter: 'sequences',
        functionName,
        value: sequences,
        expected: 'at least one completion token to train on',
      });
    }
    const context: LogitsLossContext = {
      vocabSize,
      totalTokens,
      totalSequences: sequences.length,
    };
    const members = new Set(sequences.map((_, index) => index));
    let loss = 0;
    const grads = this.backpropagate(micro, members, (logits, batch, local) => {
      const data = logits.dataSync() as Float32Array;
      const rowCount = local.reduce((sum, { position }) => sum + batch.slots[position]!.length, 0);
      const copy = new Float32Array(rowCount * vocabSize);
      const rows: LogitsRow[] = [];
      const slotOfRow: number[] = [];
      for (const { sequence, position } of local) {
        const completion = sequences[sequence]!.completionIds;
        batch.slots[position]!.forEach((slot, index) => {
          const offset = rows.length * vocabSize;
          copy.set(data.subarray(slot * vocabSize, (slot + 1) * vocabSize), offset);
          rows.push({
            sequence,
            index,
            target: completion[index]!,
            logits: copy.subarray(offset, offset + vocabSize),
          });
          slotOfRow.push(slot);
        });
      }
      const out = lossOf(rows, context);
      if (out === null || typeof out !== 'object' || !Array.isArray(out.dLogits)) {
        throw new InvalidArgumentError({
          parameter: 'lossOf()',
          functionName,
          value: out,
          expected: 'an object { loss: number, dLogits: one vocab-sized array per row }',
        });
      }
      if (typeof out.loss !== 'number') {
        throw new InvalidArgumentError({
          parameter: 'lossOf().loss',
          functionName,
          value: out.loss,
          expected: 'a number',
        });
      }
      if (out.dLogits.length !== rows.length) {
        throw new ShapeMismatchError({
          parameter: 'lossOf().dLogits',
          functionName,
          expected: `${rows.length} rows (one per completion token of the micro-batch)`,
          actual: `${out.dLogits.length} rows`,
        });
      }
      const size = batch.input.batchSize * batch.input.seqLen;
      const gradient = new Float32Array(size * vocabSize);
      out.dLogits.forEach((row, r) => {
        if (row === null || typeof row !== 'object' || row.length !== vocabSize) {
          throw new ShapeMismatchError({
            parameter: `lossOf().dLogits[${r}]`,
            functionName,
            expected: `${vocabSize} values (vocab_size)`,
            actual: row === null || typeof row !== 'object' ? String(row) : `${row.length}`,
          });
        }
        const base = slotOfRow[r]! * vocabSize;
        for (let v = 0; v < vocabSize; v++) {
          const value = row[v]!;
          if (!Number.isFinite(value)) {
            throw new NonFiniteError({
              parameter: `lossOf().dLogits[${r}]`,
              functionName,
              index: v,
              value,
            });
          }
          gradient[base + v] = value;
        }
      });
      loss += out.loss;
      return tf.tensor2d(gradient, [size, vocabSize]);
    });
    return {
      grads,
      loss,
      policyOnly: 0,
      sums: {
        clipRatioLow: 0,
        clipRatioHigh: 0,
        clipRatioRegion: 0,
        clipFraction: 0,
        dualClipFraction: 0,
        approxKl: 0,
        kl: 0,
        entropy: 0,
        ratioMean: 0,
      },
      ratioMin: 1,
      ratioMax: 1,
      tokens: totalTokens,
    };
  }

  /** The optimizer state and counters as plain data. */
  getState(): PolicyTrainerState {
    return { optimizer: this.optimizer.getState(), skippedSteps: this.skippedSteps };
  }

  /** Restores {@link PolicyTrainer.getState} output (the model weights are restored separately). */
  setState(state: PolicyTrainerState): void {
    this.optimizer.setState(state.optimizer);
    this.skippedSteps = state.skippedSteps;
  }

  /** Frees the optimizer state and the reference model (not the trained model). */
  dispose(): void {
    this.optimizer.dispose();
    this.reference?.dispose();
  }

  private globalCounts(mask: Ragged, members: Set<number>) {
    let tokenCount = 0;
    let sequenceCount = 0;
    for (const index of members) {
      const sum = mask[index]!.reduce((a, b) => a + b, 0);
      tokenCount += sum;
      if (sum > 0) sequenceCount += 1;
    }
    return {
      tokenCount: Math.max(tokenCount, 1e-12),
      sequenceCount: Math.max(sequenceCount, 1e-12),
      ...(this.grpo.normalizer === undefined ? {} : { normalizer: this.grpo.normalizer }),
    };
  }

  /** @internal */
  microBatches(
    sequences: readonly TokenSequence[],
    functionName: string,
    sft?: SftStepOptions,
  ): MicroBatch[] {
    if (!Array.isArray(sequences) || sequences.length === 0) {
      throw new InvalidArgumentError({
        parameter: 'sequences',
        functionName,
        value: sequences,
        expected: 'a non-empty array of { promptIds, completionIds }',
      });
    }
    const config = this.model.config;
    const batches: MicroBatch[] = [];
    for (let start = 0; start < sequences.length; start += this.microBatchSize) {
      const indices: number[] = [];
      for (
        let index = start;
        index < Math.min(sequences.length, start + this.microBatchSize);
        index++
      ) {
        indices.push(index);
      }
      batches.push({
        indices,
        batch: buildTokenBatch(
          indices.map((index) => sequences[index]!),
          {
            functionName,
            vocabSize: config.vocab_size,
            maxLength: config.max_position_embeddings,
            pack: sft?.pack ?? false,
            ...(sft?.rowLength === undefined ? {} : { rowLength: sft.rowLength }),
          },
        ),
      });
    }
    return batches;
  }

  private logprobsOf(model: LlamaModel, sequences: readonly TokenSequence[], functionName: string) {
    return this.logprobsOfMicro(
      model,
      this.microBatches(sequences, functionName),
      sequences.length,
    );
  }

  private logprobsOfMicro(model: LlamaModel, micro: MicroBatch[], count: number) {
    const logprobs: Ragged = new Array(count);
    const entropies: Ragged = new Array(count);
    for (const { indices, batch } of micro) {
      const [lp, en] = tf.tidy(() => {
        const { logits } = model.forwardWithCache(batch.input, false);
        const stats = tokenStats(logits, batch.targets);
        return [stats.logprobs, stats.entropy];
      });
      const lpData = lp!.dataSync() as Float32Array;
      const enData = en!.dataSync() as Float32Array;
      lp!.dispose();
      en!.dispose();
      indices.forEach((sequence, position) => {
        const slots = batch.slots[position]!;
        logprobs[sequence] = Array.from(slots, (slot) => lpData[slot]!);
        entropies[sequence] = Array.from(slots, (slot) => enData[slot]!);
      });
    }
    return { logprobs, entropies };
  }

  /** Accumulates gradients over the micro-batches holding `members`, then clips and updates. */
  private optimizerStep(
    micro: MicroBatch[],
    members: Set<number>,
    mask: Ragged,
    lossOf: LossFunction,
  ): GrpoStepMetrics {
    const started = performance.now();
    let accumulated: Accumulated;
    try {
      accumulated = this.accumulateGradients(micro, members, mask, lossOf);
    } catch (error) {
      // Non-finite model logprobs reach core's loss as NaN: skip the update when asked to.
      if (this.onNonFinite === 'skip' && NonFiniteError.isInstance(error)) {
        this.skippedSteps += 1;
        return {
          ...EMPTY_METRICS,
          step: this.optimizer.step,
          loss: Number.NaN,
          learningRate: this.learningRate,
          gradNorm: Number.NaN,
          skipped: true,
          timeMs: performance.now() - started,
        };
      }
      throw error;
    }
    return this.applyGradients(accumulated, started);
  }

  /**
   * Forward + loss + backward over the micro-batches holding `members`; returns the summed
   * gradients (caller disposes) and the loss metrics. @internal
   */
  accumulateGradients(
    micro: MicroBatch[],
    members: Set<number>,
    mask: Ragged,
    lossOf: LossFunction,
  ): Accumulated {
    let loss = 0;
    let policyOnly = 0;
    const sums: MetricSums = {
      clipRatioLow: 0,
      clipRatioHigh: 0,
      clipRatioRegion: 0,
      clipFraction: 0,
      dualClipFraction: 0,
      approxKl: 0,
      kl: 0,
      entropy: 0,
      ratioMean: 0,
    };
    let ratioMin = Infinity;
    let ratioMax = -Infinity;
    let tokens = 0;
    const grads = this.backpropagate(micro, members, (logits, batch, local) => {
      const stats = tokenStats(logits, batch.targets);
      const lpData = stats.logprobs.dataSync() as Float32Array;
      const enData = stats.entropy.dataSync() as Float32Array;
      const rows = local.map(({ sequence }) => sequence);
      const slots = local.map(({ position }) => batch.slots[position]!);
      const current = slots.map((row) => Array.from(row, (slot) => lpData[slot]!));
      const entropies = slots.map((row) => Array.from(row, (slot) => enData[slot]!));
      const out = lossOf(rows, current, entropies);
      loss += out.loss;
      if (out.result) {
        const m = out.result.metrics;
        policyOnly += out.result.policyLoss;
        for (const key of Object.keys(sums) as (keyof typeof sums)[]) {
          sums[key] += m[key] * m.tokens;
        }
        if (m.tokens > 0) {
          ratioMin = Math.min(ratioMin, m.ratioMin);
          ratioMax = Math.max(ratioMax, m.ratioMax);
        }
      }
      rows.forEach((row) => {
        tokens += mask[row]!.reduce((a, b) => a + b, 0);
      });
      const size = batch.input.batchSize * batch.input.seqLen;
      const gradLogprobs = new Float32Array(size);
      const gradEntropy = out.gradEntropy ? new Float32Array(size) : null;
      slots.forEach((row, r) => {
        row.forEach((slot, j) => {
          gradLogprobs[slot] = out.gradLogprobs[r]![j]!;
          if (gradEntropy) gradEntropy[slot] = out.gradEntropy![r]![j]!;
        });
      });
      return logitsGradient(stats, gradLogprobs, gradEntropy);
    });
    return { grads, loss, policyOnly, sums, ratioMin, ratioMax, tokens };
  }

  /**
   * Forward + backward over the micro-batches holding `members`: `dLogitsOf` (called inside
   * `tf.tidy`) turns each micro-batch's logits `[rows·T, vocab]` into d loss / d logits; the
   * parameter gradients are summed over micro-batches (caller disposes). @internal
   */
  backpropagate(
    micro: MicroBatch[],
    members: Set<number>,
    dLogitsOf: (
      logits: tf.Tensor2D,
      batch: TokenBatch,
      local: { sequence: number; position: number }[],
    ) => tf.Tensor2D,
  ): Map<string, tf.Tensor> {
    const model = this.model;
    let accumulated: Map<string, tf.Tensor> | undefined;
    try {
      for (const { indices, batch } of micro) {
        const local = indices
          .map((sequence, position) => ({ sequence, position }))
          .filter(({ sequence }) => members.has(sequence));
        if (local.length === 0) continue;
        const grads = tf.tidy(() => {
          const { logits, cache } = model.forwardWithCache(batch.input, true);
          const dLogits = dLogitsOf(logits, batch, local);
          const partial = model.backward(batch.input, cache, dLogits);
          const summed: Record<string, tf.Tensor> = {};
          for (const [name, grad] of partial) {
            summed[name] = accumulated ? tf.add(accumulated.get(name)!, grad) : grad;
          }
          return summed;
        });
        if (accumulated) for (const tensor of accumulated.values()) tensor.dispose();
        accumulated = new Map(Object.entries(grads));
      }
    } catch (error) {
      if (accumulated) for (const tensor of accumulated.values()) tensor.dispose();
      if (RlvrError.isInstance(error)) throw error;
      throw new RlvrError(ErrorCode.INVALID_ARGUMENT, 'The tfjs training step failed', {
        cause: error,
      });
    }
    if (accumulated === undefined) {
      throw new InvalidArgumentError({
        parameter: 'sequences',
        functionName: 'PolicyTrainer',
        value: members.size,
        expected: 'a non-empty mini-batch',
      });
    }
    return accumulated;
  }

  private applyGradients(accumulated: Accumulated, started: number): GrpoStepMetrics {
    const model = this.model;
    const { grads, loss, policyOnly, sums, ratioMin, ratioMax, tokens } = accumulated;
    const learningRate = this.learningRate;
    const normTensor = tf.tidy(() =>
      tf.sqrt(tf.addN([...grads.values()].map((grad) => tf.sum(tf.square(grad))))),
    );
    const gradNorm = normTensor.dataSync()[0]!;
    normTensor.dispose();
    const finite = Number.isFinite(loss) && Number.isFinite(gradNorm);
    let skipped = false;
    if (!finite) {
      for (const tensor of grads.values()) tensor.dispose();
      if (this.onNonFinite === 'error') {
        throw new NonFiniteError({
          parameter: Number.isFinite(loss) ? 'gradients' : 'loss',
          functionName: 'PolicyTrainer',
          index: 0,
          value: Number.isFinite(loss) ? gradNorm : loss,
        });
      }
      this.skippedSteps += 1;
      skipped = true;
    } else {
      const clip =
        this.maxGradNorm > 0 && gradNorm > this.maxGradNorm
          ? this.maxGradNorm / (gradNorm + 1e-6)
          : 1;
      const clipped =
        clip === 1
          ? grads
          : new Map([...grads].map(([name, grad]) => [name, tf.mul(grad, clip)] as const));
      const next = this.optimizer.apply(model.params, clipped, learningRate);
      model.replaceParams(next);
      for (const tensor of grads.values()) tensor.dispose();
      if (clipped !== grads) for (const tensor of clipped.values()) tensor.dispose();
    }
    const mean = (value: number) => (tokens > 0 ? value / tokens : 0);
    return {
      step: this.optimizer.step,
      loss,
      policyLoss: policyOnly,
      learningRate,
      gradNorm,
      skipped,
      tokens,
      timeMs: performance.now() - started,
      clipRatioLow: mean(sums.clipRatioLow),
      clipRatioHigh: mean(sums.clipRatioHigh),
      clipRatioRegion: mean(sums.clipRatioRegion),
      clipFraction: mean(sums.clipFraction),
      dualClipFraction: mean(sums.dualClipFraction),
      approxKl: mean(sums.approxKl),
      kl: mean(sums.kl),
      entropy: mean(sums.entropy),
      ratioMean: tokens > 0 ? mean(sums.ratioMean) : 1,
      ratioMin: tokens > 0 ? ratioMin : 1,
      ratioMax: tokens > 0 ? ratioMax : 1,
    };
  }
}

/**
 * Creates a {@link PolicyTrainer} for a model. With `grpo.klCoefficient` > 0 a frozen copy of the
 * model's current weights becomes the reference policy; with β = 0 none is kept.
 *
 * @example
 * ```ts
 * await selectBackend();
 * const model = await createLlamaModel(checkpoint);
 * const trainer = await createPolicyTrainer(model, {
 *   schedule: { learningRate: 1e-4, schedule: 'cosine', warmupSteps: 10, totalSteps: 500 },
 *   maxGradNorm: 1, microBatchSize: 16,
 *   grpo: { epsilonLow: 0.2, epsilonHigh: 0.28, aggregation: 'token-mean' },
 * });
 * const { steps } = trainer.grpoStep({ sequences, advantages });
 * ```
 * @throws {InvalidArgumentError} naming the offending option.
 */
export async function createPolicyTrainer(
  model: LlamaModel,
  options?: PolicyTrainerOptions,
): Promise<PolicyTrainer> {
  const functionName = 'createPolicyTrainer';
  if (model === null || typeof model !== 'object' || !(model.params instanceof Map)) {
    throw new InvalidArgumentError({
      parameter: 'model',
      functionName,
      value: model,
      expected: 'a LlamaModel from createLlamaModel()',
    });
  }
  model.assertLive(functionName);
  const opts = validateOptions<PolicyTrainerOptions>(options, {
    parameter: 'options',
    functionName,
  });
  const schedule = opts.schedule ?? { learningRate: 1e-5 };
  validateSchedule(schedule, functionName);
  const maxGradNorm = validateNumber(opts.maxGradNorm ?? 1, {
    parameter: 'options.maxGradNorm',
    functionName,
    min: 0,
  });
  const microBatchSize = validateInteger(opts.microBatchSize ?? Number.MAX_SAFE_INTEGER, {
    parameter: 'options.microBatchSize',
    functionName,
    min: 1,
  });
  const onNonFinite = validateOneOf(opts.onNonFinite ?? 'error', ['error', 'skip'], {
    parameter: 'options.onNonFinite',
    functionName,
  });
  const optimizerOptions = validateOptions<AdamWOptions>(opts.optimizer, {
    parameter: 'options.optimizer',
    functionName,
  });
  const betas = optimizerOptions.betas ?? [0.9, 0.999];
  betas.forEach((beta, index) => {
    validateNumber(beta, {
      parameter: `options.optimizer.betas[${index}]`,
      functionName,
      min: 0,
      max: 1,
      exclusiveMax: true,
    });
  });
  validateNumber(optimizerOptions.epsilon ?? 1e-8, {
    parameter: 'options.optimizer.epsilon',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  validateNumber(optimizerOptions.weightDecay ?? 0, {
    parameter: 'options.optimizer.weightDecay',
    functionName,
    min: 0,
  });
  const raw = validateOptions<GrpoLossConfig>(opts.grpo, {
    parameter: 'options.grpo',
    functionName,
  });
  const epsilonLow = raw.epsilonLow ?? 0.2;
  const grpo: PolicyTrainer['grpo'] = {
    ...raw,
    ratioLevel: raw.ratioLevel ?? 'token',
    epsilonLow,
    epsilonHigh: raw.epsilonHigh ?? epsilonLow,
    klCoefficient: raw.klCoefficient ?? 0,
    klEstimator: raw.klEstimator ?? 'k3',
    entropyCoefficient: raw.entropyCoefficient ?? 0,
    aggregation: raw.aggregation ?? 'seq-mean-token-mean',
  };
  // Let core validate the loss settings once, on a one-token batch.
  try {
    policyLoss({
      logprobs: [[-1]],
      oldLogprobs: [[-1]],
      advantages: [0],
      ratioLevel: grpo.ratioLevel,
      epsilonLow: grpo.epsilonLow,
      epsilonHigh: grpo.epsilonHigh,
      dualClip: grpo.dualClip,
      delta: grpo.delta,
      klCoefficient: grpo.klCoefficient,
      klEstimator: grpo.klEstimator,
      refLogprobs: [[-1]],
      entropies: [[0]],
      entropyCoefficient: grpo.entropyCoefficient,
      aggregation: grpo.aggregation,
      aggregationOptions:
        grpo.normalizer === undefined ? undefined : { normalizer: grpo.normalizer },
    });
    if (grpo.mismatch !== undefined) {
      mismatchCorrection({ trainerLogprobs: [[-1]], behaviourLogprobs: [[-1]], ...grpo.mismatch });
    }
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      throw new InvalidArgumentError({
        parameter: `options.grpo.${error.parameter.replace(/^options\./, '')}`,
        functionName,
        value: error.value,
        expected: error.message.replace(/^.*expected /, '').replace(/, got .*$/, ''),
      });
    }
    throw error;
  }
  const reference =
    grpo.klCoefficient > 0
      ? await createLlamaModel(opts.referenceCheckpoint ?? model.toCheckpoint())
      : undefined;
  return new PolicyTrainer(model, reference, {
    optimizer: new AdamW(optimizerOptions),
    schedule,
    maxGradNorm,
    microBatchSize,
    onNonFinite,
    grpo,
  });
}
