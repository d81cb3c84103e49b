import { InvalidArgumentError, ShapeMismatchError } from '@rlvr/core';
import type { PreparedInput } from './prepared-input.js';

/** One training sequence: a prompt and the completion whose tokens carry the loss. */
export type TokenSequence = {
  /** Prompt token ids (no loss; at least one token). */
  promptIds: readonly number[];
  /** Completion token ids (the loss is on these; may be empty). */
  completionIds: readonly number[];
};

/** Where each completion token of each sequence sits in a {@link TokenBatch}. @internal */
export type TokenBatch = {
  input: PreparedInput;
  /** Target id per position (the next token; 0 where unused). */
  targets: Int32Array;
  /** Flat position (row·T + column) of the logits predicting completion token j of sequence i. */
  slots: Int32Array[];
};

/** Options of {@link buildTokenBatch}. @internal */
export type BuildBatchOptions = {
  /** Row length T; default: the longest sequence (minus one: the last token is never an input). */
  rowLength?: number;
  /** Pack several sequences into a row (segments); default false (one sequence per row). */
  pack?: boolean;
  /** Context limit (max_position_embeddings). */
  maxLength: number;
  vocabSize: number;
  functionName: string;
};

/**
 * Lays out sequences as right-padded rows (or packed rows with segment ids and per-segment
 * positions). The model input of a sequence is prompt + completion without its last token; the
 * logits at position p predict token p + 1. @internal
 */
export function buildTokenBatch(
  sequences: readonly TokenSequence[],
  options: BuildBatchOptions,
): TokenBatch {
  const { functionName, vocabSize, maxLength } = options;
  if (!Array.isArray(sequences) || sequences.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'sequences',
      functionName,
      value: sequences,
      expected: 'a non-empty array of { promptIds, completionIds }',
    });
  }
  const lengths = sequences.map((sequence, index) => {
    const checkIds = (ids: unknown, name: string, minLength: number) => {
      if (!Array.isArray(ids) || ids.length < minLength) {
        throw new InvalidArgumentError({
          parameter: `sequences[${index}].${name}`,
          functionName,
          value: ids,
          expected: `an array of at least ${minLength} token id(s)`,
        });
      }
      ids.forEach((id: unknown, position) => {
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
          throw new InvalidArgumentError({
            parameter: `sequences[${index}].${name}[${position}]`,
            functionName,
            value: id,
            expected: `a token id in [0, ${vocabSize})`,
          });
        }
      });
    };
    if (sequence === null || typeof sequence !== 'object') {
      throw new InvalidArgumentError({
        parameter: `sequences[${index}]`,
        functionName,
        value: sequence,
        expected: 'an object { promptIds, completionIds }',
      });
    }
    checkIds(sequence.promptIds, 'promptIds', 1);
    checkIds(sequence.completionIds, 'completionIds', 0);
    const total = sequence.promptIds.length + sequence.completionIds.length;
    if (total > maxLength) {
      throw new ShapeMismatchError({
        parameter: `sequences[${index}]`,
        functionName,
        expected: `at most ${maxLength} tokens (max_position_embeddings)`,
        actual: `${total} tokens (${sequence.promptIds.length} prompt + ${sequence.completionIds.length} completion)`,
      });
    }
    return Math.max(total - 1, 1);
  });
  const longest = Math.max(...lengths);
  const rowLength = options.rowLength ?? longest;
  if (!Number.isInteger(rowLength) || rowLength < longest) {
    throw new InvalidArgumentError({
      parameter: 'rowLength',
      functionName,
      value: rowLength,
      expected: `an integer >= ${longest} (the longest sequence minus its last token)`,
    });
  }
  // Assign sequences to rows (first fit, in order, when packing).
  const rowOf: number[] = [];
  const offsetOf: number[] = [];
  const rowFill: number[] = [];
  lengths.forEach((length) => {
    let row = -1;
    if (options.pack) row = rowFill.findIndex((fill) => fill + length <= rowLength);
    if (row < 0) {
      row = rowFill.length;
      rowFill.push(0);
    }
    rowOf.push(row);
    offsetOf.push(rowFill[row]!);
    rowFill[row]! += length;
  });
  const batchSize = rowFill.length;
  const size = batchSize * rowLength;
  const ids = new Int32Array(size);
  const positions = new Int32Array(size);
  const segments = new Int32Array(size);
  const targets = new Int32Array(size);
  const slots: Int32Array[] = [];
  sequences.forEach((sequence, index) => {
    const tokens = [...sequence.promptIds, ...sequence.completionIds];
    const base = rowOf[index]! * rowLength + offsetOf[index]!;
    const segment = index + 1;
    for (let position = 0; position < lengths[index]!; position++) {
      ids[base + position] = tokens[position]!;
      positions[base + position] = position;
      segments[base + position] = segment;
      targets[base + position] = tokens[position + 1] ?? 0;
    }
    const promptLength = sequence.promptIds.length;
    slots.push(Int32Array.from(sequence.completionIds, (_, j) => base + promptLength - 1 + j));
  });
  return {
    input: { batchSize, seqLen: rowLength, ids, positions, segments },
    targets,
    slots,
  };
}
