import {
  aggregationWeights,
  highEntropyMask,
  InvalidArgumentError,
  type MismatchMetrics,
  mismatchCorrection,
  NonFiniteError,
  policyLoss,
  validateFiniteArray,
  validateOptions,
  validateRagged,
} from '@rlvr/core';
import { parseOptions } from '@rlvr/options';
import type { TokenSequence } from '../batch/token-batch.js';
import type { LlamaModel } from '../model/llama-model.js';
import { withoutUnsetNulls } from '../null-as-unset.js';
import {
  firstNonFinite,
  forwardLogprobs,
  type LossFunction,
  type MicroBatch,
  type Ragged,
} from './gradient-engine.js';
import { GRPO_STEP_OPTIONS } from './step-options.js';
import { corePolicySettings, type ResolvedGrpoLoss } from './trainer-options.js';
import type { GrpoBatch } from './trainer-types.js';

/** A validated {@link GrpoBatch} with its step options. @internal */
export type GrpoInput = {
  sequences: readonly TokenSequence[];
  count: number;
  advantages: number[];
  mask: Ragged;
  behaviour: readonly ArrayLike<number>[] | undefined;
  numIterations: number;
  miniBatchSize: number;
};

/** Validates a GRPO batch and the step options against the loss settings. @internal */
export function validateGrpoInput(
  batch: GrpoBatch,
  options: unknown,
  config: ResolvedGrpoLoss,
  functionName: string,
): GrpoInput {
  const opts = parseOptions(GRPO_STEP_OPTIONS, withoutUnsetNulls(GRPO_STEP_OPTIONS, options), {
    parameter: 'options',
    functionName,
  });
  if (batch === null || typeof batch !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'batch',
      functionName,
      value: batch,
      expected: 'a GrpoBatch { sequences, advantages }',
    });
  }
  validateOptions(batch, {
    parameter: 'batch',
    functionName,
    known: ['sequences', 'advantages', 'mask', 'behaviourLogprobs'],
  });
  const { sequences } = batch;
  const count = Array.isArray(sequences) ? sequences.length : 0;
  const { numIterations } = opts;
  const miniBatchSize = opts.miniBatchSize ?? Math.max(count, 1);
  return {
    sequences,
    count,
    numIterations,
    miniBatchSize,
    ...validateBatchArrays(batch, count, config, functionName),
  };
}

function validateBatchArrays(
  batch: GrpoBatch,
  count: number,
  config: ResolvedGrpoLoss,
  functionName: string,
): Pick<GrpoInput, 'advantages' | 'mask' | 'behaviour'> {
  if (!Array.isArray(batch.sequences)) return { advantages: [], mask: [], behaviour: undefined };
  const completionShape = batch.sequences.map((sequence) => sequence.completionIds as number[]);
  const advantages = Array.from(
    validateFiniteArray(batch.advantages, {
      parameter: 'batch.advantages',
      functionName,
      length: count,
    }),
  );
  const shape = { functionName, shapeOf: completionShape, shapeName: 'completionIds' };
  const mask: Ragged =
    batch.mask === undefined
      ? completionShape.map((row) => new Array<number>(row.length).fill(1))
      : validateRagged(batch.mask, { parameter: 'batch.mask', ...shape }).map((row) =>
          Array.from(row),
        );
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
      : validateRagged(batch.behaviourLogprobs, { parameter: 'batch.behaviourLogprobs', ...shape });
  return { advantages, mask, behaviour };
}

/**
 * What every optimizer step of a GRPO call shares: π_old, the reference, the correction, the
 * pre-update entropies (`topEntropyQuantile` < 1) and the off-policy mask's behaviour logprobs
 * (the batch's, else π_old; absent when neither exists: the mask could not drop anything).
 */
export type GrpoPrepared = {
  old: Ragged | undefined;
  reference: Ragged | undefined;
  mask: Ragged;
  importanceWeights: Ragged | undefined;
  mismatch: MismatchMetrics | undefined;
  entropies?: Ragged;
  behaviour?: readonly ArrayLike<number>[];
};

/**
 * π_old (when needed), the reference logprobs (β > 0), the mismatch correction and the
 * pre-update entropies (for the high-entropy selection), all at the loss temperature.
 * @throws {NonFiniteError} when π_old, the entropies or the reference logprobs are not finite.
 * @internal
 */
export function prepareGrpo(
  model: LlamaModel,
  reference: LlamaModel | undefined,
  micro: MicroBatch[],
  input: GrpoInput,
  config: ResolvedGrpoLoss,
  functionName: string,
): GrpoPrepared {
  const { count, numIterations, miniBatchSize } = input;
  const needOld = numIterations > 1 || miniBatchSize < count || config.mismatch !== undefined;
  const needEntropies = config.topEntropyQuantile < 1;
  const checked = (rows: Ragged, parameter: string) => {
    const bad = firstNonFinite(rows);
    if (bad) {
      const value = rows[bad[0]]![bad[1]]!;
      throw new NonFiniteError({ parameter, functionName, index: bad, value });
    }
    return rows;
  };
  const statsOf = (which: LlamaModel, parameter: string) => {
    const stats = forwardLogprobs(which, micro, count, config.temperature);
    return { logprobs: checked(stats.logprobs, parameter), entropies: stats.entropies };
  };
  const before = needOld || needEntropies ? statsOf(model, 'old logprobs (π_old)') : undefined;
  const old = needOld ? before!.logprobs : undefined;
  const entropies = needEntropies
    ? checked(before!.entropies, 'entropies of the pre-update policy')
    : undefined;
  const refLogprobs = reference && statsOf(reference, 'reference logprobs').logprobs;
  const variants = {
    ...(entropies ? { entropies } : {}),
    ...(config.offPolicyMaskThreshold !== undefined && (input.behaviour ?? old)
      ? { behaviour: (input.behaviour ?? old)! }
      : {}),
  };
  if (!(config.mismatch && input.behaviour && old)) {
    return {
      old,
      reference: refLogprobs,
      mask: input.mask,
      importanceWeights: undefined,
      mismatch: undefined,
      ...variants,
    };
  }
  const correction = mismatchCorrection({
    trainerLogprobs: old,
    behaviourLogprobs: input.behaviour,
    mask: input.mask,
    ...config.mismatch,
  });
  return {
    old,
    reference: refLogprobs,
    mask: correction.mask,
    importanceWeights: correction.weights,
    mismatch: correction.metrics,
    ...variants,
  };
}

/**
 * `topEntropyQuantile` < 1: the high-entropy selection over the mini-batch `members` (one
 * quantile for all its micro-batches), from the pre-update entropies; rows outside `members`
 * are left empty. @internal
 */
function entropySelection(
  config: ResolvedGrpoLoss,
  prepared: GrpoPrepared,
  members: ReadonlySet<number>,
): Ragged | undefined {
  if (prepared.entropies === undefined) return undefined;
  const rows = [...members];
  const { mask } = highEntropyMask({
    entropies: rows.map((row) => prepared.entropies![row]!),
    mask: rows.map((row) => prepared.mask[row]!),
    quantile: config.topEntropyQuantile,
  });
  const selection: Ragged = prepared.mask.map(() => []);
  rows.forEach((row, index) => {
    selection[row] = mask[index]!;
  });
  return selection;
}

/** d loss / d entropy per token: −η · aggregation weight (· the high-entropy selection). */
function entropyBonusWeights(
  config: ResolvedGrpoLoss,
  weights: Ragged,
  selection: readonly ArrayLike<number>[] | undefined,
): Ragged {
  return weights.map((row, r) =>
    row.map((w, t) => -config.entropyCoefficient * w * (selection ? selection[r]![t]! : 1)),
  );
}

/** Token and sequence counts of the mini-batch `members` (the aggregation's global counts). */
function globalCounts(mask: Ragged, members: ReadonlySet<number>, normalizer: number | undefined) {
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
    ...(normalizer === undefined ? {} : { normalizer }),
  };
}

/**
 * The per-micro-batch GRPO loss of one mini-batch: core's `policyLoss` with the mini-batch's
 * global counts, plus the entropy bonus's d loss / d entropy. @internal
 */
export function grpoLossFunction(
  config: ResolvedGrpoLoss,
  advantages: readonly number[],
  prepared: GrpoPrepared,
  members: ReadonlySet<number>,
): LossFunction {
  const { mask, old, reference, importanceWeights, behaviour } = prepared;
  const counts = globalCounts(mask, members, config.normalizer);
  const selection = entropySelection(config, prepared, members);
  const lossOf: LossFunction = (rows, current, entropies) => {
    const pick = <T>(all: readonly T[] | undefined) => all && rows.map((row) => all[row]!);
    const rowMask = pick(mask)!;
    const rowSelection = pick(selection);
    const settings = corePolicySettings(config);
    // without behaviour logprobs or π_old the off-policy mask compares the policy with itself
    if (behaviour === undefined) delete settings.offPolicyMaskThreshold;
    const result = policyLoss({
      logprobs: current,
      oldLogprobs: pick(old) ?? current,
      advantages: rows.map((row) => advantages[row]!),
      mask: rowMask,
      ratioLevel: config.ratioLevel,
      ...settings,
      ...(behaviour ? { behaviourLogprobs: pick(behaviour) } : {}),
      ...(rowSelection ? { entropyMask: rowSelection } : {}),
      refLogprobs: pick(reference),
      klCoefficient: config.beta,
      klEstimator: config.klEstimator,
      entropies,
      entropyCoefficient: config.entropyCoefficient,
      importanceWeights: pick(importanceWeights),
      aggregation: config.lossAggregation,
      aggregationOptions: counts,
    });
    let gradEntropy: Ragged | undefined;
    if (config.entropyCoefficient !== 0) {
      const weights = aggregationWeights(rowMask, config.lossAggregation, counts);
      gradEntropy = entropyBonusWeights(config, weights, rowSelection);
    }
    return { loss: result.loss, gradLogprobs: result.gradLogprobs, gradEntropy, result };
  };
  return lossOf;
}
