/**
 * What every engine's training steps share, below them: the micro-batch layout of a step, the
 * per-token loss function type and the scoring of one micro-batch's logprobs with it (the loss
 * value and metrics come from @rlvr/core's float64 math on the engine's logprobs). @internal
 */
import type { policyLoss } from '@rlvr/core';
import type { TokenBatch } from '../batch/token-batch.js';
import { type Accumulated, addLossMetrics, emptySums } from './step-metrics.js';

/** Per sequence, per completion token. @internal */
export type Ragged = number[][];

/**
 * A group of sequences laid out as one model input; on the native engine, whether its backward
 * keeps (`cache`) or recomputes its activations (chosen by the trainer's memory plan). @internal
 */
export type MicroBatch = { indices: number[]; batch: TokenBatch; keep?: 'cache' | 'recompute' };

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

/** The sequences of `micro` in `members` with their row in the micro-batch. @internal */
export function membersIn(
  micro: MicroBatch,
  members: ReadonlySet<number>,
): { sequence: number; position: number }[] {
  return micro.indices
    .map((sequence, position) => ({ sequence, position }))
    .filter(({ sequence }) => members.has(sequence));
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
