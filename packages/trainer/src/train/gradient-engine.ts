import { ErrorCode, InvalidArgumentError, type policyLoss, RlvrError } from '@rlvr/core';
import * as tf from '@tensorflow/tfjs-core';
import type { GrpoHead } from '../backend/ort-grpo-head.js';
import {
  type GraphGrpoLoss,
  graphForward,
  graphGradients,
  graphLogits,
  graphLogitsGradients,
} from '../backend/ort-train-step-kernel.js';
import type { LlamaModel } from '../model/llama-model.js';
import { nativeAccumulate, nativeForwardLogprobs, type NativeAdamW } from '../native/native-steps.js';
import { logitsGradient, tokenStats } from '../model/token-stats.js';
import type { AdamW } from '../optim/adamw.js';
import { buildTokenBatch, type TokenBatch, type TokenSequence } from './batch.js';
import { type Accumulated, addLossMetrics, emptySums } from './step-metrics.js';
import type { SftStepOptions } from './trainer-types.js';

/** Per sequence, per completion token. @internal */
export type Ragged = number[][];

/** A group of sequences laid out as one model input. @internal */
export type MicroBatch = { indices: number[]; batch: TokenBatch };

/**
 * Per micro-batch: the loss and d loss / d logprob (and / d entropy) per token; `graph`, when
 * set, is the same loss for the `grads` graph's GRPO head (one graph run per micro-batch).
 * @internal
 */
export type LossFunction = ((
  rows: number[],
  logprobs: Ragged,
  entropies: Ragged,
) => {
  loss: number;
  gradLogprobs: Ragged;
  gradEntropy: Ragged | undefined;
  result: ReturnType<typeof policyLoss> | undefined;
}) & { graph?: GraphLossSource };

/**
 * A loss whose gradient the graph can take without a forward run first: with `head`, GRPO's
 * (computed in the graph from its inputs); without, fixed per-token `loss_weights` (−d loss /
 * d logprob, as `sftStep`'s cross-entropy). @internal
 */
export type GraphLossSource = {
  head?: GrpoHead;
  scalars: Record<string, number>;
  /** Per-token inputs (graph input name → ragged rows) of the sequences `rows`. */
  rows(rows: number[]): { tokens: Record<string, Ragged>; entropyWeights?: Ragged };
};

/** The sequences of `micro` in `members` with their row in the micro-batch. @internal */
export function membersIn(
  micro: MicroBatch,
  members: ReadonlySet<number>,
): { sequence: number; position: number }[] {
  return micro.indices
    .map((sequence, position) => ({ sequence, position }))
    .filter(({ sequence }) => members.has(sequence));
}

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
 * Splits `sequences` into micro-batches of at most `microBatchSize` sequences, each laid out for
 * the model (optionally packed). @internal
 */
export function microBatches(
  model: LlamaModel,
  microBatchSize: number,
  sequences: readonly TokenSequence[],
  functionName: string,
  layout?: SftStepOptions,
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
  const batches: MicroBatch[] = [];
  for (let start = 0; start < sequences.length; start += microBatchSize) {
    const end = Math.min(sequences.length, start + microBatchSize);
    const indices = Array.from({ length: end - start }, (_, offset) => start + offset);
    batches.push({
      indices,
      batch: buildTokenBatch(
        indices.map((index) => sequences[index]!),
        {
          functionName,
          vocabSize: config.vocab_size,
          maxLength: config.max_position_embeddings,
          pack: layout?.pack ?? false,
          ...(layout?.rowLength === undefined ? {} : { rowLength: layout.rowLength }),
        },
      ),
    });
  }
  return batches;
}

/** Whether `model`'s forward and backward run as onnxruntime train-step graphs. @internal */
export function usesGraph(model: LlamaModel): boolean {
  return model.ops.trainStep === true;
}

/** Logprobs and entropies at every position `[B·T]` of a batch (graph or tfjs forward). */
function positionStats(
  model: LlamaModel,
  batch: TokenBatch,
  temperature: number,
): { logprobs: Float32Array; entropy: Float32Array } {
  if (usesGraph(model)) return graphForward(model.config, model.params, batch, temperature);
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
 * On a model with train-step graphs ({@link usesGraph}) each micro-batch is two graph runs (the
 * logits, then forward + backward from d logits); else the tfjs forward and backward. @internal
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
  if (usesGraph(model)) {
    return sumOverMicroBatches(micro, members, ({ batch }, local) => {
      const dLogits = dLogitsOf(graphLogits(model.config, model.params, batch), batch, local);
      return graphLogitsGradients(model.config, model.params, batch, dLogits);
    });
  }
  return backpropagate(model, micro, members, (logits, batch, local) =>
    tf.tensor2d(dLogitsOf(logits.dataSync() as Float32Array, batch, local), logits.shape),
  );
}

/** The loss metrics an optimizer step accumulates over micro-batches. @internal */
export type Totals = Omit<Accumulated, 'grads'>;

/** Zeroed {@link Totals}. @internal */
export function emptyTotals(): Totals {
  return {
    loss: 0,
    policyOnly: 0,
    sums: emptySums(),
    ratioMin: Infinity,
    ratioMax: -Infinity,
    tokens: 0,
  };
}

/**
 * A {@link GraphLossSource}'s inputs for the sequences `local` of one micro-batch, laid out at
 * their completion slots `[B·T]` (zero elsewhere). @internal
 */
export function graphLossInputs(
  batch: TokenBatch,
  local: { sequence: number; position: number }[],
  source: GraphLossSource,
): { grpo?: GraphGrpoLoss; lossWeights?: Float32Array; entropyWeights?: Float32Array } {
  const slots = local.map(({ position }) => batch.slots[position]!);
  const size = batch.input.batchSize * batch.input.seqLen;
  const scatter = (rows: Ragged) => scatterToSlots(slots, rows, size);
  const inputs = source.rows(local.map(({ sequence }) => sequence));
  const tokens = Object.fromEntries(
    Object.entries(inputs.tokens).map(([name, rows]) => [name, scatter(rows)]),
  );
  const weights = source.head
    ? { grpo: { head: source.head, tokens, scalars: source.scalars } }
    : { lossWeights: tokens.loss_weights! };
  return {
    ...weights,
    ...(inputs.entropyWeights ? { entropyWeights: scatter(inputs.entropyWeights) } : {}),
  };
}

/**
 * `lossOf` on one micro-batch's per-position logprobs and entropies (`[B·T]`) for the sequences of
 * `local`; adds its loss metrics to `totals` and returns its d loss / d logprob and d loss /
 * d entropy per completion token (ragged). @internal
 */
export function scoreMicroBatch(
  batch: TokenBatch,
  local: { sequence: number; position: number }[],
  stats: { logprobs: Float32Array; entropy: Float32Array },
  lossOf: LossFunction,
  mask: Ragged,
  totals: Totals,
): { gradLogprobs: Ragged; gradEntropy: Ragged | undefined } {
  const rows = local.map(({ sequence }) => sequence);
  const slots = local.map(({ position }) => batch.slots[position]!);
  const current = slots.map((row) => Array.from(row, (slot) => stats.logprobs[slot]!));
  const entropies = slots.map((row) => Array.from(row, (slot) => stats.entropy[slot]!));
  const out = lossOf(rows, current, entropies);
  totals.loss += out.loss;
  if (out.result) addLossMetrics(totals, out.result);
  for (const row of rows) totals.tokens += mask[row]!.reduce((a, b) => a + b, 0);
  return { gradLogprobs: out.gradLogprobs, gradEntropy: out.gradEntropy };
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
 * gradients (caller disposes) and the loss metrics. On a model with train-step graphs
 * ({@link usesGraph}) each micro-batch is two graph runs: the forward gives `lossOf` its logprobs,
 * then forward + backward with `lossOf`'s per-token gradients as the loss weights. @internal
 */
export function accumulateGradients(
  model: LlamaModel,
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  mask: Ragged,
  lossOf: LossFunction,
  temperature = 1,
): Accumulated {
  const totals = emptyTotals();
  if (model.native) {
    const { native } = model;
    nativeAccumulate(native, micro, members, mask, lossOf, temperature, native.activations, totals);
    // the gradients live in the model's store
    return { grads: new Map(), ...totals };
  }
  if (usesGraph(model) && lossOf.graph) {
    const source = lossOf.graph;
    const grads = sumOverMicroBatches(micro, members, ({ batch }, local) => {
      const run = graphGradients(model.config, model.params, batch, {
        temperature,
        ...graphLossInputs(batch, local, source),
      });
      try {
        // the loss value and metrics: `lossOf` (core's policyLoss) on this same forward's logprobs
        scoreMicroBatch(batch, local, run, lossOf, mask, totals);
      } catch (error) {
        for (const tensor of run.grads.values()) tensor.dispose();
        throw error;
      }
      return run.grads;
    });
    return { grads, ...totals };
  }
  if (usesGraph(model)) {
    const grads = sumOverMicroBatches(micro, members, ({ batch }, local) => {
      const stats = graphForward(model.config, model.params, batch, temperature);
      const scored = scoreMicroBatch(batch, local, stats, lossOf, mask, totals);
      const { gradLogprobs, gradEntropy } = microGradients(batch, local, scored);
      return graphGradients(model.config, model.params, batch, {
        temperature,
        lossWeights: gradLogprobs.map((g) => -g),
        ...(gradEntropy ? { entropyWeights: gradEntropy } : {}),
      }).grads;
    });
    return { grads, ...totals };
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
