import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import { buildTokenBatch, type TokenBatch, type TokenSequence } from '../batch/token-batch.js';
import type { LlamaModel } from '../model/llama-model.js';
import { logitsGradient, tokenStats } from '../model/token-stats.js';
import type { AdamW } from '../optim/adamw.js';
import {
  emptyTotals,
  type LossFunction,
  type MicroBatch,
  membersIn,
  type Ragged,
  scoreMicroBatch,
} from './micro-batch.js';
import { type NativeAdamW, nativeAccumulate, nativeForwardLogprobs } from './native-steps.js';
import type { Accumulated } from './step-metrics.js';
import type { SftStepOptions } from './trainer-types.js';

export {
  emptyTotals,
  type LossFunction,
  type MicroBatch,
  membersIn,
  type Ragged,
  scoreMicroBatch,
  type Totals,
} from './micro-batch.js';

/** Ragged per-token `rows` laid out at their slots in a `[size]` array (zero elsewhere). */
function scatterToSlots(slots: readonly ArrayLike<number>[], rows: Ragged, size: number) {
  const out = new Float32Array(size);
  slots.forEach((row, r) => {
    for (let j = 0; j < row.length; j++) out[row[j]!] = rows[r]![j]!;
  });
  return out;
}

/** Turns one micro-batch's logits `[rows·T, vocab]` into d loss / d logits (inside `tf.tidy`). */
export type LogitsGradientFunction = (
  logits: tf.Tensor2D,
  batch: TokenBatch,
  local: { sequence: number; position: number }[],
) => tf.Tensor2D;

/**
 * Splits `sequences` (in order) into micro-batches of at most `microBatchSize` sequences and, with
 * `tokenBudget`, at most that many tokens (rows × row length), each laid out for the model
 * (optionally packed). @internal
 */
export function microBatches(
  model: LlamaModel,
  microBatchSize: number,
  sequences: readonly TokenSequence[],
  functionName: string,
  layout?: SftStepOptions,
  tokenBudget?: number,
): MicroBatch[] {
  if (!Array.isArray(sequences) || sequences.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'sequences',
      functionName,
      value: sequences,
      expected: 'a non-empty array of { promptIds, completionIds }',
    });
  }
  const config = model.config;
  const build = (indices: number[]) =>
    buildTokenBatch(
      indices.map((index) => sequences[index]!),
      {
        functionName,
        vocabSize: config.vocab_size,
        maxLength: config.max_position_embeddings,
        pack: layout?.pack ?? false,
        ...(layout?.rowLength === undefined ? {} : { rowLength: layout.rowLength }),
      },
    );
  const tokensOf = (batch: TokenBatch) => batch.input.batchSize * batch.input.seqLen;
  const batches: MicroBatch[] = [];
  let start = 0;
  while (start < sequences.length) {
    // at most microBatchSize sequences, and (with a budget) rows × row length within it; a
    // sequence over the budget alone is a micro-batch of its own
    let end = Math.min(sequences.length, start + microBatchSize);
    let indices = Array.from({ length: end - start }, (_, offset) => start + offset);
    let batch = build(indices);
    if (tokenBudget !== undefined && tokensOf(batch) > tokenBudget) {
      end = start + 1;
      batch = build([start]);
      while (end < Math.min(sequences.length, start + microBatchSize)) {
        const next = build([...Array.from({ length: end - start + 1 }, (_, o) => start + o)]);
        if (tokensOf(next) > tokenBudget) break;
        batch = next;
        end += 1;
      }
      indices = Array.from({ length: end - start }, (_, offset) => start + offset);
    }
    batches.push({ indices, batch });
    start = end;
  }
  return batches;
}

/** Logprobs and entropies at every position `[B·T]` of a batch (tfjs forward). */
function positionStats(
  model: LlamaModel,
  batch: TokenBatch,
  temperature: number,
): { logprobs: Float32Array; entropy: Float32Array } {
  const [lp, en] = tf.tidy(() => {
    const { logits } = model.forwardWithCache(batch.input, false);
    const stats = tokenStats(logits, batch.targets, temperature);
    return [stats.logprobs, stats.entropy];
  });
  const logprobs = lp!.dataSync() as Float32Array;
  const entropy = en!.dataSync() as Float32Array;
  lp!.dispose();
  en!.dispose();
  return { logprobs, entropy };
}

/**
 * Logprobs and entropies of `log softmax(logits / temperature)` at every completion token, without
 * a backward pass. Non-finite values are returned as they are. @internal
 */
export function forwardLogprobs(
  model: LlamaModel,
  micro: MicroBatch[],
  count: number,
  temperature: number,
): { logprobs: Ragged; entropies: Ragged } {
  if (model.native) return nativeForwardLogprobs(model.native, micro, count, temperature);
  const logprobs: Ragged = new Array(count);
  const entropies: Ragged = new Array(count);
  for (const { indices, batch } of micro) {
    const { logprobs: lpData, entropy: enData } = positionStats(model, batch, temperature);
    indices.forEach((sequence, position) => {
      const slots = batch.slots[position]!;
      logprobs[sequence] = Array.from(slots, (slot) => lpData[slot]!);
      entropies[sequence] = Array.from(slots, (slot) => enData[slot]!);
    });
  }
  return { logprobs, entropies };
}

/** `[sequence, token]` of the first NaN/±Infinity in `rows`, or undefined. @internal */
export function firstNonFinite(rows: Ragged): [number, number] | undefined {
  for (let row = 0; row < rows.length; row++) {
    const values = rows[row]!;
    for (let column = 0; column < values.length; column++) {
      if (!Number.isFinite(values[column]!)) return [row, column];
    }
  }
  return undefined;
}

/**
 * Forward + backward over the micro-batches holding `members`: `dLogitsOf` turns each
 * micro-batch's logits into d loss / d logits; the parameter gradients are summed over
 * micro-batches (caller disposes). @internal
 */
export function backpropagate(
  model: LlamaModel,
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  dLogitsOf: LogitsGradientFunction,
): Map<string, tf.Tensor> {
  return sumOverMicroBatches(micro, members, ({ batch }, local) => {
    const grads = tf.tidy(() => {
      const { logits, cache } = model.forwardWithCache(batch.input, true);
      const dLogits = dLogitsOf(logits, batch, local);
      return Object.fromEntries(model.backward(batch.input, cache, dLogits));
    });
    return new Map(Object.entries(grads));
  });
}

/**
 * {@link backpropagate} for a loss on the raw logits given as data: `dLogitsOf` gets a
 * micro-batch's logits `[B·T·V]` (temperature 1) and returns d loss / d logits of the same size.
 * @internal
 */
export function backpropagateLogits(
  model: LlamaModel,
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  dLogitsOf: (
    logits: Float32Array,
    batch: TokenBatch,
    local: { sequence: number; position: number }[],
  ) => Float32Array,
): Map<string, tf.Tensor> {
  return backpropagate(model, micro, members, (logits, batch, local) =>
    tf.tensor2d(dLogitsOf(logits.dataSync() as Float32Array, batch, local), logits.shape),
  );
}

/** {@link scoreMicroBatch}'s per-token gradients laid out at their slots `[B·T]`. */
function microGradients(
  batch: TokenBatch,
  local: { sequence: number; position: number }[],
  scored: { gradLogprobs: Ragged; gradEntropy: Ragged | undefined },
): { gradLogprobs: Float32Array; gradEntropy: Float32Array | null } {
  const slots = local.map(({ position }) => batch.slots[position]!);
  const size = batch.input.batchSize * batch.input.seqLen;
  return {
    gradLogprobs: scatterToSlots(slots, scored.gradLogprobs, size),
    gradEntropy: scored.gradEntropy ? scatterToSlots(slots, scored.gradEntropy, size) : null,
  };
}

/**
 * Forward + loss + backward of a per-token loss (`lossOf` gets the logprobs and entropies of
 * `softmax(logits / temperature)`) over the micro-batches holding `members`; returns the summed
 * gradients (caller disposes; empty on the native engine, whose gradients are in the model's
 * store) and the loss metrics. @internal
 */
export function accumulateGradients(
  model: LlamaModel,
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  mask: Ragged,
  lossOf: LossFunction,
  temperature = 1,
  maskSeed?: (micro: number) => number,
): Accumulated {
  const totals = emptyTotals();
  if (model.native) {
    const { native } = model;
    const keep = native.activations;
    nativeAccumulate(native, micro, members, mask, lossOf, temperature, keep, totals, maskSeed);
    // the gradients live in the model's store
    return { grads: new Map(), ...totals };
  }
  const grads = backpropagate(model, micro, members, (logits, batch, local) => {
    const stats = tokenStats(logits, batch.targets, temperature);
    const data = {
      logprobs: stats.logprobs.dataSync() as Float32Array,
      entropy: stats.entropy.dataSync() as Float32Array,
    };
    const scored = scoreMicroBatch(batch, local, data, lossOf, mask, totals);
    const { gradLogprobs, gradEntropy } = microGradients(batch, local, scored);
    return logitsGradient(stats, gradLogprobs, gradEntropy);
  });
  return { grads, ...totals };
}

/**
 * Sums `gradientsOf` (one micro-batch's gradients, owned by the caller after return) over the
 * micro-batches holding `members`; frees partial sums on failure. @internal
 */
function sumOverMicroBatches(
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  gradientsOf: (
    micro: MicroBatch,
    local: { sequence: number; position: number }[],
  ) => Map<string, tf.Tensor>,
): Map<string, tf.Tensor> {
  let accumulated: Map<string, tf.Tensor> | undefined;
  const free = (grads: Map<string, tf.Tensor> | undefined) => {
    if (grads) for (const tensor of grads.values()) tensor.dispose();
  };
  try {
    for (const batch of micro) {
      const local = membersIn(batch, members);
      if (local.length === 0) continue;
      const grads = gradientsOf(batch, local);
      if (accumulated === undefined) {
        accumulated = grads;
        continue;
      }
      const previous = accumulated;
      accumulated = new Map(
        [...grads].map(([name, grad]) => [name, tf.add(previous.get(name)!, grad)]),
      );
      free(previous);
      free(grads);
    }
  } catch (error) {
    free(accumulated);
    if (RlvrError.isInstance(error)) throw error;
    throw new RlvrError(ErrorCode.INVALID_ARGUMENT, 'The training step failed', { cause: error });
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

/**
 * Global-norm clipping and one AdamW update from `grads` (disposed here). Returns the norm before
 * clipping; with a non-finite `loss` or norm nothing is applied (`applied: false`). @internal
 */
export function clipAndApply(
  model: LlamaModel,
  optimizer: AdamW | NativeAdamW,
  grads: Map<string, tf.Tensor>,
  settings: { loss: number; learningRate: number; maxGradNorm: number },
): { gradNorm: number; applied: boolean } {
  // the native engine's gradients and moments live in the model's store
  if (model.native) return (optimizer as NativeAdamW).apply(settings);
  const normTensor = tf.tidy(() =>
    tf.sqrt(tf.addN([...grads.values()].map((grad) => tf.sum(tf.square(grad))))),
  );
  const gradNorm = normTensor.dataSync()[0]!;
  normTensor.dispose();
  if (!Number.isFinite(settings.loss) || !Number.isFinite(gradNorm)) {
    for (const tensor of grads.values()) tensor.dispose();
    return { gradNorm, applied: false };
  }
  const { maxGradNorm } = settings;
  const clip = maxGradNorm > 0 && gradNorm > maxGradNorm ? maxGradNorm / (gradNorm + 1e-6) : 1;
  const clipped =
    clip === 1
      ? grads
      : new Map([...grads].map(([name, grad]) => [name, tf.mul(grad, clip)] as const));
  const next = (optimizer as AdamW).apply(model.params, clipped, settings.learningRate);
  model.replaceParams(next);
  for (const tensor of grads.values()) tensor.dispose();
  if (clipped !== grads) for (const tensor of clipped.values()) tensor.dispose();
  return { gradNorm, applied: true };
}
