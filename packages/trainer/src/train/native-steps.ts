/**
 * The `PolicyTrainer` steps on the native engine: forward logprobs (π_old, the reference,
 * `completionLogprobs`), gradient accumulation of a per-token loss (SFT, GRPO: @rlvr/core's
 * float64 `policyLoss` gives d loss / d logprob from the same forward's logprobs, which the head's
 * backward takes as loss weights — one forward per micro-batch), of a loss on the logits
 * (`logitsStep`), and the clipped AdamW update in place. The activations a backward needs are kept
 * as `keep` says (cache or recompute: `gradientCheckpointing`). @internal
 */
import { NonFiniteError, ShapeMismatchError } from '@rlvr/core';
import type { TokenBatch, TokenSequence } from '../batch/token-batch.js';
import type { EngineLora, Keep, NativeEngine } from '../native/native-engine.js';
import { evalLora, type NativeParts } from '../native/native-model.js';
import type { TrainStore } from '../native/train-store.js';
import {
  type AdamWOptions,
  type AdamWState,
  isProjectionWeight,
  transposed,
} from '../optim/adamw.js';
import {
  type LossFunction,
  type MicroBatch,
  membersIn,
  type Ragged,
  scoreMicroBatch,
  type Totals,
} from './micro-batch.js';
import { emptySums } from './step-metrics.js';
import type { LogitsLossFunction, LogitsRow } from './trainer-types.js';

/** The loss positions of the sequences `local` of a micro-batch (their completion slots, in order). */
function positionsOf(batch: TokenBatch, local: { position: number }[]): Int32Array {
  const total = local.reduce((sum, { position }) => sum + batch.slots[position]!.length, 0);
  const out = new Int32Array(total);
  let index = 0;
  for (const { position } of local) {
    out.set(batch.slots[position]!, index);
    index += batch.slots[position]!.length;
  }
  return out;
}

/** `[B·T]` arrays holding per-position values at `positions` (zero elsewhere). */
function scatter(batch: TokenBatch, positions: Int32Array, values: Float32Array): Float32Array {
  const out = new Float32Array(batch.input.batchSize * batch.input.seqLen);
  positions.forEach((position, i) => {
    out[position] = values[i]!;
  });
  return out;
}

/** Logprobs and entropies at `temperature` of every completion token (no backward). */
export function nativeForwardLogprobs(
  parts: NativeParts,
  micro: MicroBatch[],
  count: number,
  temperature: number,
): { logprobs: Ragged; entropies: Ragged } {
  const { engine, store } = parts;
  const logprobs: Ragged = new Array(count);
  const entropies: Ragged = new Array(count);
  const lora = evalLora(parts);
  for (const { indices, batch } of micro) {
    const state = engine.forward(batch, store.weights, 'none', undefined, lora);
    const stats = engine.stats(state, store.weights, temperature);
    let offset = 0;
    indices.forEach((sequence, position) => {
      const length = batch.slots[position]!.length;
      logprobs[sequence] = Array.from(stats.logprobs.subarray(offset, offset + length));
      entropies[sequence] = Array.from(stats.entropy.subarray(offset, offset + length));
      offset += length;
    });
  }
  return { logprobs, entropies };
}

/**
 * The store that trains (the adapters' with LoRA, else the model's) and the adapters of a
 * training forward (dropout masks seeded by `maskSeed`). @internal
 */
export function trainedParts(
  parts: NativeParts,
  maskSeed: number,
): { trained: TrainStore; lora: EngineLora | undefined } {
  const { lora } = parts;
  if (!lora) return { trained: parts.store, lora: undefined };
  return { trained: lora.store, lora: { adapters: lora, weights: lora.store.weights, maskSeed } };
}

/**
 * Forward, `lossOf` (on that forward's logprobs and entropies at `temperature`) and backward over
 * the micro-batches holding `members`; the gradients are summed into the trained store (cleared
 * first). `maskSeed(i)` seeds micro-batch i's LoRA dropout masks.
 */
export function nativeAccumulate(
  parts: NativeParts,
  micro: MicroBatch[],
  members: ReadonlySet<number>,
  mask: Ragged,
  lossOf: LossFunction,
  temperature: number,
  keep: Keep,
  totals: Totals,
  maskSeed: (micro: number) => number = () => 0,
): void {
  const { engine, store } = parts;
  trainedParts(parts, 0).trained.clearGrads();
  for (const [microIndex, microBatch] of micro.entries()) {
    const local = membersIn(microBatch, members);
    if (local.length === 0) continue;
    const { batch } = microBatch;
    const { trained, lora } = trainedParts(parts, maskSeed(microIndex));
    const positions = positionsOf(batch, local);
    const state = engine.forward(batch, store.weights, microBatch.keep ?? keep, positions, lora);
    const stats = engine.stats(state, store.weights, temperature);
    const full = {
      logprobs: scatter(batch, positions, stats.logprobs),
      entropy: scatter(batch, positions, stats.entropy),
    };
    const scored = scoreMicroBatch(batch, local, full, lossOf, mask, totals);
    const lossWeights = new Float32Array(positions.length);
    const entropyWeights = scored.gradEntropy ? new Float32Array(positions.length) : undefined;
    let index = 0;
    scored.gradLogprobs.forEach((row, r) => {
      row.forEach((g, j) => {
        lossWeights[index] = -g;
        if (entropyWeights) entropyWeights[index] = scored.gradEntropy![r]![j]!;
        index += 1;
      });
    });
    engine.backward(
      state,
      store.weights,
      { temperature, lossWeights, ...(entropyWeights ? { entropyWeights } : {}), stats },
      trained,
    );
  }
}

/**
 * A loss on the raw logits over every micro-batch: per micro-batch `lossOf` gets one row per
 * completion token (sequence order, then token order) and returns d loss / d logits, which is
 * back-propagated into the store (cleared first). Returns the summed loss.
 */
export function nativeAccumulateLogits(
  parts: NativeParts,
  micro: MicroBatch[],
  sequences: readonly TokenSequence[],
  lossOf: LogitsLossFunction,
  context: Parameters<LogitsLossFunction>[1],
  keep: Keep,
  check: (out: ReturnType<LogitsLossFunction>, rows: number) => void,
  functionName: string,
  maskSeed: (micro: number) => number = () => 0,
): number {
  const { engine, store } = parts;
  const vocab = engine.config.vocab_size;
  const members = new Set(sequences.map((_, index) => index));
  trainedParts(parts, 0).trained.clearGrads();
  let loss = 0;
  for (const [microIndex, microBatch] of micro.entries()) {
    const local = membersIn(microBatch, members);
    if (local.length === 0) continue;
    const { batch } = microBatch;
    const { trained, lora } = trainedParts(parts, maskSeed(microIndex));
    const positions = positionsOf(batch, local);
    const state = engine.forward(batch, store.weights, microBatch.keep ?? keep, positions, lora);
    const logits = engine.logits(state, store.weights);
    const rows: LogitsRow[] = [];
    for (const { sequence } of local) {
      const completion = sequences[sequence]!.completionIds;
      completion.forEach((target, index) => {
        const offset = rows.length * vocab;
        rows.push({ sequence, index, target, logits: logits.subarray(offset, offset + vocab) });
      });
    }
    const out = lossOf(rows, context);
    check(out, rows.length);
    loss += out.loss;
    const dLogits = new Float32Array(rows.length * vocab);
    out.dLogits.forEach((row, r) => {
      if (row === null || typeof row !== 'object' || row.length !== vocab) {
        throw new ShapeMismatchError({
          parameter: `lossOf().dLogits[${r}]`,
          functionName,
          expected: `${vocab} values (vocab_size)`,
          actual: row === null || typeof row !== 'object' ? String(row) : `${row.length}`,
        });
      }
      for (let v = 0; v < vocab; v++) {
        const value = row[v]!;
        if (!Number.isFinite(value)) {
          throw new NonFiniteError({
            parameter: `lossOf().dLogits[${r}]`,
            functionName,
            index: v,
            value,
          });
        }
        dLogits[r * vocab + v] = value;
      }
    });
    engine.backwardLogits(state, store.weights, dLogits, trained);
  }
  return loss;
}

/** Empty loss totals of a logits loss. @internal */
export function logitsTotals(loss: number, tokens: number): Totals {
  return { loss, policyOnly: 0, sums: emptySums(), ratioMin: 1, ratioMax: 1, tokens };
}

/**
 * AdamW on a native model's store: PyTorch's rule (the kernel in `train-store.ts`), with the
 * step counter and the moments as plain data for checkpoints (Hugging Face names and layout).
 * @internal
 */
export class NativeAdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
  step = 0;

  constructor(
    private readonly store: TrainStore,
    options: Required<AdamWOptions>,
  ) {
    this.beta1 = options.betas[0];
    this.beta2 = options.betas[1];
    this.epsilon = options.epsilon;
    this.weightDecay = options.weightDecay;
  }

  /**
   * Global-norm clipping (PyTorch's `clip_grad_norm_`: `max / (norm + 1e-6)` when the norm
   * exceeds `maxGradNorm` > 0) and one update from the store's gradients, unless `loss` or the
   * norm is not finite. Returns the norm before clipping and whether the update was applied.
   */
  apply(settings: { loss: number; learningRate: number; maxGradNorm: number }): {
    gradNorm: number;
    applied: boolean;
  } {
    const gradNorm = this.store.gradNorm();
    if (!Number.isFinite(settings.loss) || !Number.isFinite(gradNorm)) {
      return { gradNorm, applied: false };
    }
    const { maxGradNorm } = settings;
    const clip = maxGradNorm > 0 && gradNorm > maxGradNorm ? maxGradNorm / (gradNorm + 1e-6) : 1;
    this.step += 1;
    this.store.adamW({
      learningRate: settings.learningRate,
      beta1: this.beta1,
      beta2: this.beta2,
      epsilon: this.epsilon,
      weightDecay: this.weightDecay,
      clip,
      t: this.step,
    });
    return { gradNorm, applied: true };
  }

  /** The state as plain data (moments by Hugging Face name, `[out, in]` layout, copies). */
  getState(): AdamWState {
    const m = this.store.m.toNamedTensors();
    const v = this.store.v.toNamedTensors();
    return {
      step: this.step,
      layout: 'hf',
      moments: m.map((tensor, index) => ({
        name: tensor.name,
        shape: tensor.shape,
        m: Float32Array.from(tensor.data),
        v: Float32Array.from(v[index]!.data),
      })),
    };
  }

  /**
   * Restores {@link NativeAdamW.getState} output; also takes the state of a tfjs-engine trainer
   * (projection moments transposed, `layout: 'in-out'`). Moments absent from `state` are zero.
   */
  setState(state: AdamWState): void {
    this.step = state.step;
    const flip = (state.layout ?? 'in-out') === 'in-out';
    const byName = new Map(state.moments.map((moment) => [moment.name, moment]));
    for (const which of ['m', 'v'] as const) {
      for (const target of this.store[which].toNamedTensors()) {
        const moment = byName.get(target.name);
        if (moment === undefined) {
          target.data.fill(0);
          continue;
        }
        const turn = flip && isProjectionWeight(target.name) && target.shape.length === 2;
        // held [in, out] = [cols, rows] of the Hugging Face shape
        const source = turn
          ? transposed(moment[which], target.shape[1]!, target.shape[0]!)
          : moment[which];
        target.data.set(source);
      }
    }
  }

  /** Nothing to free: the moments live in the model's store. */
  dispose(): void {}
}

export type { NativeEngine };
