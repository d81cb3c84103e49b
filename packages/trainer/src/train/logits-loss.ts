import { InvalidArgumentError, NonFiniteError, ShapeMismatchError } from '@rlvr/core';
import type { TokenBatch, TokenSequence } from '../batch/token-batch.js';
import type { LlamaModel } from '../model/llama-model.js';
import { backpropagateLogits, type MicroBatch } from './gradient-engine.js';
import { logitsTotals, nativeAccumulateLogits } from './native-steps.js';
import { type Accumulated, emptySums } from './step-metrics.js';
import type { LogitsLossContext, LogitsLossFunction, LogitsRow } from './trainer-types.js';

/**
 * Gradients of a {@link LogitsLossFunction} over all micro-batches (caller disposes the
 * gradients). The logits handed to `lossOf` are the raw ones (no temperature). @internal
 */
export function logitsGradients(
  model: LlamaModel,
  micro: MicroBatch[],
  sequences: readonly TokenSequence[],
  lossOf: LogitsLossFunction,
  functionName: string,
): Accumulated {
  const vocabSize = model.config.vocab_size;
  const totalTokens = sequences.reduce((sum, s) => sum + s.completionIds.length, 0);
  if (totalTokens === 0) {
    throw new InvalidArgumentError({
      parameter: 'sequences',
      functionName,
      value: sequences,
      expected: 'at least one completion token to train on',
    });
  }
  const context: LogitsLossContext = { vocabSize, totalTokens, totalSequences: sequences.length };
  if (model.native) {
    const { native } = model;
    const check = (out: ReturnType<LogitsLossFunction>, rows: number) =>
      checkLossResult(out, rows, functionName);
    const loss = nativeAccumulateLogits(
      native,
      micro,
      sequences,
      lossOf,
      context,
      native.activations,
      check,
      functionName,
    );
    return { grads: new Map(), ...logitsTotals(loss, totalTokens) };
  }
  const members = new Set(sequences.map((_, index) => index));
  let loss = 0;
  const grads = backpropagateLogits(model, micro, members, (logits, batch, local) => {
    const { rows, slotOfRow } = rowsOf(logits, batch, local, sequences, vocabSize);
    const out = lossOf(rows, context);
    checkLossResult(out, rows.length, functionName);
    loss += out.loss;
    return dLogitsArray(out.dLogits, slotOfRow, batch, vocabSize, functionName);
  });
  return {
    grads,
    loss,
    policyOnly: 0,
    sums: emptySums(),
    ratioMin: 1,
    ratioMax: 1,
    tokens: totalTokens,
  };
}

/** A copy of the logits row of every completion token of the micro-batch. */
function rowsOf(
  data: Float32Array,
  batch: TokenBatch,
  local: { sequence: number; position: number }[],
  sequences: readonly TokenSequence[],
  vocabSize: number,
): { rows: LogitsRow[]; slotOfRow: number[] } {
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
  return { rows, slotOfRow };
}

function checkLossResult(
  out: ReturnType<LogitsLossFunction>,
  rowCount: number,
  functionName: string,
): void {
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
  if (out.dLogits.length !== rowCount) {
    throw new ShapeMismatchError({
      parameter: 'lossOf().dLogits',
      functionName,
      expected: `${rowCount} rows (one per completion token of the micro-batch)`,
      actual: `${out.dLogits.length} rows`,
    });
  }
}

/** The `[rows·T · vocab]` gradient, zero outside completion positions. */
function dLogitsArray(
  dLogits: ReturnType<LogitsLossFunction>['dLogits'],
  slotOfRow: number[],
  batch: TokenBatch,
  vocabSize: number,
  functionName: string,
): Float32Array {
  const size = batch.input.batchSize * batch.input.seqLen;
  const gradient = new Float32Array(size * vocabSize);
  dLogits.forEach((row, r) => {
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
  return gradient;
}
