import { assertKnownKeys, InvalidArgumentError, ShapeMismatchError } from '@rlvr/core';

/**
 * Token rows for the model, all of one length T. Rows may be right- or left-padded
 * (`attentionMask`) or hold several packed sequences (`segmentIds`).
 */
export type ModelInput = {
  /** Token ids `[batch][T]` (integers in `[0, vocab_size)`). */
  inputIds: readonly (readonly number[])[];
  /** 1 = real token, 0 = padding (Hugging Face's `attention_mask`). Default all ones. */
  attentionMask?: readonly (readonly number[])[];
  /**
   * Packing: tokens attend only to earlier tokens with the same segment id; 0 marks padding.
   * Default: one segment per row (from `attentionMask`).
   */
  segmentIds?: readonly (readonly number[])[];
  /**
   * RoPE positions `[batch][T]`. Default: the index within the token's segment, counting only
   * unmasked tokens (Hugging Face's `cumsum(attention_mask) − 1`).
   */
  positionIds?: readonly (readonly number[])[];
};

/** A validated, flattened {@link ModelInput}. @internal */
export type PreparedInput = {
  batchSize: number;
  seqLen: number;
  ids: Int32Array;
  positions: Int32Array;
  /** 0 = padding; tokens attend to earlier tokens of the same non-zero segment. */
  segments: Int32Array;
};

function matrix(
  value: unknown,
  parameter: string,
  functionName: string,
  rows: number,
  columns: number,
  check: (item: number) => boolean,
  expected: string,
): Int32Array {
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: 'an array of rows',
    });
  }
  if (value.length !== rows) {
    throw new ShapeMismatchError({
      parameter,
      functionName,
      expected: `${rows} rows`,
      actual: `${value.length} rows`,
    });
  }
  const out = new Int32Array(rows * columns);
  value.forEach((row: unknown, rowIndex) => {
    if (!Array.isArray(row) && !ArrayBuffer.isView(row)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}[${rowIndex}]`,
        functionName,
        value: row,
        expected: 'an array of integers',
      });
    }
    const items = row as ArrayLike<unknown>;
    if (items.length !== columns) {
      throw new ShapeMismatchError({
        parameter: `${parameter}[${rowIndex}]`,
        functionName,
        expected: `length ${columns} (every row as long as inputIds[0])`,
        actual: `length ${items.length}`,
      });
    }
    for (let column = 0; column < columns; column++) {
      const item = items[column];
      if (typeof item !== 'number' || !Number.isInteger(item) || !check(item)) {
        throw new InvalidArgumentError({
          parameter: `${parameter}[${rowIndex}][${column}]`,
          functionName,
          value: item,
          expected,
        });
      }
      out[rowIndex * columns + column] = item;
    }
  });
  return out;
}

/** Validates and flattens a {@link ModelInput}. @internal */
export function prepareInput(
  input: ModelInput,
  vocabSize: number,
  functionName: string,
): PreparedInput {
  if (input === null || typeof input !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'input',
      functionName,
      value: input,
      expected: 'an object with inputIds',
    });
  }
  assertKnownKeys(input, {
    parameter: 'input',
    functionName,
    known: ['inputIds', 'attentionMask', 'segmentIds', 'positionIds'],
  });
  const rows = input.inputIds;
  if (
    !Array.isArray(rows) ||
    rows.length === 0 ||
    !Array.isArray(rows[0]) ||
    rows[0].length === 0
  ) {
    throw new InvalidArgumentError({
      parameter: 'input.inputIds',
      functionName,
      value: rows,
      expected: 'a non-empty array of non-empty token-id rows',
    });
  }
  const batchSize = rows.length;
  const seqLen = rows[0].length;
  const ids = matrix(
    rows,
    'input.inputIds',
    functionName,
    batchSize,
    seqLen,
    (id) => id >= 0 && id < vocabSize,
    `a token id in [0, ${vocabSize})`,
  );
  let segments: Int32Array;
  if (input.segmentIds !== undefined) {
    segments = matrix(
      input.segmentIds,
      'input.segmentIds',
      functionName,
      batchSize,
      seqLen,
      (id) => id >= 0,
      'a segment id >= 0 (0 = padding)',
    );
  } else if (input.attentionMask !== undefined) {
    segments = matrix(
      input.attentionMask,
      'input.attentionMask',
      functionName,
      batchSize,
      seqLen,
      (flag) => flag === 0 || flag === 1,
      '0 or 1',
    );
  } else {
    segments = new Int32Array(batchSize * seqLen).fill(1);
  }
  let positions: Int32Array;
  if (input.positionIds !== undefined) {
    positions = matrix(
      input.positionIds,
      'input.positionIds',
      functionName,
      batchSize,
      seqLen,
      (position) => position >= 0,
      'a position >= 0',
    );
  } else {
    positions = new Int32Array(batchSize * seqLen);
    for (let row = 0; row < batchSize; row++) {
      const counts = new Map<number, number>();
      for (let column = 0; column < seqLen; column++) {
        const index = row * seqLen + column;
        const segment = segments[index]!;
        if (segment === 0) continue;
        const count = counts.get(segment) ?? 0;
        positions[index] = count;
        counts.set(segment, count + 1);
      }
    }
  }
  return { batchSize, seqLen, ids, positions, segments };
}

/**
 * The additive attention bias `[batch, T, T]`: 0 where query i may attend key j (j ≤ i, same
 * non-zero segment), −1e9 elsewhere; a padding query attends to itself so its row stays finite.
 * @internal
 */
export function attentionBias(input: PreparedInput, window: number | null = null): Float32Array {
  const { batchSize, seqLen, segments, positions } = input;
  const bias = new Float32Array(batchSize * seqLen * seqLen).fill(-1e9);
  for (let row = 0; row < batchSize; row++) {
    const base = row * seqLen;
    for (let query = 0; query < seqLen; query++) {
      const segment = segments[base + query]!;
      const offset = (base + query) * seqLen;
      if (segment === 0) {
        bias[offset + query] = 0;
        continue;
      }
      for (let key = 0; key <= query; key++) {
        if (segments[base + key] !== segment) continue;
        // a sliding-window layer sees key j from query i only if i − j < window (positions)
        if (window !== null && positions[base + query]! - positions[base + key]! >= window)
          continue;
        bias[offset + key] = 0;
      }
    }
  }
  return bias;
}
