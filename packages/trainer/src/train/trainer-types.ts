import type { MismatchMetrics, PolicyLossMetrics } from '@rlvr/core';
import type { TokenSequence } from '../batch/token-batch.js';
import type { AdamWState } from '../optim/adamw.js';
import type { SftStepOptions } from './step-options.js';

export type {
  CompletionLogprobsOptions,
  GrpoStepOptions,
  SftStepOptions,
} from './step-options.js';

/** One generation batch for {@link PolicyTrainer.grpoStep}. */
export type GrpoBatch = {
  /** Prompt + completion token ids per rollout. */
  sequences: readonly TokenSequence[];
  /** One advantage per sequence (e.g. from @rlvr/core's `groupAdvantages`). */
  advantages: readonly number[];
  /** Per completion token: 1 = trained on, 0 = masked (e.g. truncated completions). Default 1. */
  mask?: readonly (readonly number[])[];
  /**
   * Logprobs reported by the sampler (needed for the mismatch correction): the processed
   * distribution's (temperature, then any top-k/top-p/min-p truncation, renormalized).
   */
  behaviourLogprobs?: readonly (readonly number[])[];
};

/** Result of {@link PolicyTrainer.completionLogprobs}. */
export type CompletionLogprobsResult = {
  /** Per sequence, per completion token: log p_T(token). */
  logprobs: number[][];
  /** Per sequence, per completion token: entropy of p_T (nats). */
  entropies: number[][];
  /**
   * False when any logprob or entropy is NaN/±Infinity (only with `onNonFinite: 'skip'`; with
   * `'error'` such values throw). The values are returned as computed: the caller decides.
   */
  finite: boolean;
};

/** Metrics of one optimizer step. */
export type OptimizerStepMetrics = {
  /** Optimizer step index after this update (1-based). */
  step: number;
  loss: number;
  learningRate: number;
  /** Global gradient L2 norm before clipping. */
  gradNorm: number;
  /** True when the update was skipped because of a non-finite loss, gradient or logprob. */
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
export type PolicyTrainerState = {
  optimizer: AdamWState;
  /** Updates skipped so far because of non-finite values. */
  skippedSteps: number;
  /**
   * Skipped updates since the last applied one (the `maxConsecutiveSkips` counter). Absent in
   * states saved before it existed: 0.
   */
  consecutiveSkips?: number;
};
