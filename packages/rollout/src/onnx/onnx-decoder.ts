import { ErrorCode, RlvrError } from '@rlvr/core';
import type * as Ort from 'onnxruntime-node';
import type { BatchDecoder } from '../engine/batch-decoder.js';
import { createMatchingSession, graphError, openWrapped, type SessionSettings } from './ort.js';

/** The shapes of an Optimum-style decoder graph, read from the session's metadata. */
export type DecoderLayout = {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  /** Element type of `input_ids` / `attention_mask` / `position_ids`. */
  indexType: 'int64' | 'int32';
  hasPositionIds: boolean;
};

type IndexArray = BigInt64Array | Int32Array;

/** Reads the KV layout from an ONNX decoder with Optimum's input and output names. @internal */
export function readLayout(session: Ort.InferenceSession): DecoderLayout {
  const inputs = new Map(session.inputMetadata.map((meta) => [meta.name, meta]));
  const outputs = new Map(session.outputMetadata.map((meta) => [meta.name, meta]));
  const inputIds = inputs.get('input_ids');
  const logits = outputs.get('logits');
  if (!inputIds?.isTensor || !inputs.has('attention_mask') || !logits?.isTensor) {
    throw graphError(
      `the ONNX graph is not an Optimum-style decoder: expected inputs input_ids, attention_mask (+ position_ids, past_key_values.{i}.key|value) and output logits; got inputs [${session.inputNames.join(', ')}]`,
    );
  }
  let numLayers = 0;
  while (inputs.has(`past_key_values.${numLayers}.key`)) numLayers++;
  const past = inputs.get('past_key_values.0.key');
  if (numLayers === 0 || !past?.isTensor) {
    throw graphError(
      'the ONNX graph has no past_key_values.{i}.key inputs (export it with a KV cache)',
    );
  }
  const numKvHeads = past.shape[1];
  const headDim = past.shape[3];
  const vocabSize = logits.shape[2];
  if (
    typeof numKvHeads !== 'number' ||
    typeof headDim !== 'number' ||
    typeof vocabSize !== 'number'
  ) {
    throw graphError(
      `the ONNX graph must have static KV heads, head size and vocabulary size; got past shape [${past.shape.join(', ')}] and logits shape [${logits.shape.join(', ')}]`,
    );
  }
  const indexType = inputIds.type === 'int32' ? 'int32' : 'int64';
  return {
    numLayers,
    numKvHeads,
    headDim,
    vocabSize,
    indexType,
    hasPositionIds: inputs.has('position_ids'),
  };
}

/**
 * Drives an Optimum-style ONNX decoder (`input_ids`, `attention_mask`, `position_ids`,
 * `past_key_values.{i}.key|value` → `logits`, `present.{i}.key|value`) with left padding and a KV
 * cache: one forward pass over the distinct prompts, whose cache is then copied to every sample
 * row, then one `session.run` per token.
 * @internal
 */
export class OnnxDecoder implements BatchDecoder {
  readonly layout: DecoderLayout;
  readonly vocabSize: number;
  private readonly ort: typeof Ort;
  private session: Ort.InferenceSession;
  private past: Ort.Tensor[] = [];
  private mask: Uint8Array = new Uint8Array(0);
  private positions: number[] = [];
  private rows = 0;
  private length = 0;

  private constructor(ort: typeof Ort, session: Ort.InferenceSession) {
    this.ort = ort;
    this.session = session;
    this.layout = readLayout(session);
    this.vocabSize = this.layout.vocabSize;
  }

  /** Creates a decoder for ONNX bytes or a file path. */
  static async create(model: Uint8Array | string, settings: SessionSettings): Promise<OnnxDecoder> {
    return openWrapped(model, settings, (ort, session) => new OnnxDecoder(ort, session));
  }

  /** Replaces the session (after a weight update); the new graph must have the same layout. */
  async replaceSession(model: Uint8Array | string, settings: SessionSettings): Promise<void> {
    const session = await createMatchingSession(
      model,
      settings,
      readLayout,
      this.layout,
      'ONNX graph',
    );
    const old = this.session;
    this.session = session;
    this.past = [];
    await old.release();
  }

  async release(): Promise<void> {
    this.past = [];
    await this.session.release();
  }

  private indexTensor(values: ArrayLike<number>, dims: number[]): Ort.Tensor {
    const data: IndexArray =
      this.layout.indexType === 'int64'
        ? new BigInt64Array(values.length)
        : new Int32Array(values.length);
    if (data instanceof BigInt64Array) {
      for (let index = 0; index < values.length; index++) data[index] = BigInt(values[index]!);
    } else {
      for (let index = 0; index < values.length; index++) data[index] = values[index]!;
    }
    return new this.ort.Tensor(this.layout.indexType, data, dims);
  }

  private async run(feeds: Record<string, Ort.Tensor>): Promise<Ort.InferenceSession.ReturnType> {
    try {
      return await this.session.run(feeds);
    } catch (error) {
      throw new RlvrError(
        ErrorCode.MODEL_LOAD_FAILED,
        `onnxruntime failed to run the decoder: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  async start(
    prompts: readonly (readonly number[])[],
    copies: readonly number[],
  ): Promise<Float32Array> {
    const { numLayers, numKvHeads, headDim, vocabSize } = this.layout;
    const batch = prompts.length;
    const length = Math.max(...prompts.map((prompt) => prompt.length));
    const ids = new Array<number>(batch * length).fill(0);
    const mask = new Array<number>(batch * length).fill(0);
    const positionIds = new Array<number>(batch * length).fill(0);
    prompts.forEach((prompt, row) => {
      const pad = length - prompt.length;
      prompt.forEach((token, column) => {
        ids[row * length + pad + column] = token;
        mask[row * length + pad + column] = 1;
        positionIds[row * length + pad + column] = column;
      });
    });
    const feeds: Record<string, Ort.Tensor> = {
      input_ids: this.indexTensor(ids, [batch, length]),
      attention_mask: this.indexTensor(mask, [batch, length]),
    };
    if (this.layout.hasPositionIds)
      feeds.position_ids = this.indexTensor(positionIds, [batch, length]);
    const empty = new Float32Array(0);
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value']) {
        feeds[`past_key_values.${layer}.${kind}`] = new this.ort.Tensor('float32', empty, [
          batch,
          numKvHeads,
          0,
          headDim,
        ]);
      }
    }
    const outputs = await this.run(feeds);
    const rows = copies.reduce((acc, count) => acc + count, 0);
    const source: number[] = [];
    copies.forEach((count, prompt) => {
      for (let copy = 0; copy < count; copy++) source.push(prompt);
    });
    // last-position logits per row
    const allLogits = outputs.logits!.data as Float32Array;
    const logits = new Float32Array(rows * vocabSize);
    source.forEach((prompt, row) => {
      const offset = (prompt * length + length - 1) * vocabSize;
      logits.set(allLogits.subarray(offset, offset + vocabSize), row * vocabSize);
    });
    // expand the cache from prompts to rows
    const perRow = numKvHeads * length * headDim;
    this.past = [];
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value']) {
        const present = outputs[`present.${layer}.${kind}`]!.data as Float32Array;
        const expanded = new Float32Array(rows * perRow);
        source.forEach((prompt, row) => {
          expanded.set(present.subarray(prompt * perRow, (prompt + 1) * perRow), row * perRow);
        });
        this.past.push(
          new this.ort.Tensor('float32', expanded, [rows, numKvHeads, length, headDim]),
        );
      }
    }
    this.mask = new Uint8Array(rows * length);
    this.positions = [];
    source.forEach((prompt, row) => {
      const pad = length - prompts[prompt]!.length;
      this.mask.fill(1, row * length + pad, (row + 1) * length);
      this.positions.push(prompts[prompt]!.length);
    });
    this.rows = rows;
    this.length = length;
    return logits;
  }

  async next(tokens: Int32Array): Promise<Float32Array> {
    const { numLayers } = this.layout;
    const rows = this.rows;
    const length = this.length + 1;
    const mask = new Uint8Array(rows * length);
    for (let row = 0; row < rows; row++) {
      mask.set(this.mask.subarray(row * this.length, (row + 1) * this.length), row * length);
      mask[row * length + length - 1] = 1;
    }
    const feeds: Record<string, Ort.Tensor> = {
      input_ids: this.indexTensor(tokens, [rows, 1]),
      attention_mask: this.indexTensor(mask, [rows, length]),
    };
    if (this.layout.hasPositionIds)
      feeds.position_ids = this.indexTensor(this.positions, [rows, 1]);
    for (let layer = 0; layer < numLayers; layer++) {
      feeds[`past_key_values.${layer}.key`] = this.past[2 * layer]!;
      feeds[`past_key_values.${layer}.value`] = this.past[2 * layer + 1]!;
    }
    const outputs = await this.run(feeds);
    this.past = [];
    for (let layer = 0; layer < numLayers; layer++) {
      this.past.push(outputs[`present.${layer}.key`]!, outputs[`present.${layer}.value`]!);
    }
    this.mask = mask;
    this.length = length;
    for (let row = 0; row < rows; row++) this.positions[row]!++;
    return outputs.logits!.data as Float32Array;
  }

  /**
   * Feeds a chunk of tokens per current row after the cache (multi-turn: the last policy token
   * and the environment's tokens), left-padded to the longest chunk with masked holes, positions
   * continuing each row's own; `hold` rows feed one masked placeholder and do not advance. Returns
   * the next-token logits of every row (`[rows, vocab]`).
   */
  async feed(
    chunks: readonly (readonly number[])[],
    hold: readonly boolean[],
  ): Promise<Float32Array> {
    const { numLayers, vocabSize } = this.layout;
    const rows = this.rows;
    const width = Math.max(1, ...chunks.map((chunk) => chunk.length));
    const length = this.length + width;
    const ids = new Array<number>(rows * width).fill(0);
    const positionIds = new Array<number>(rows * width).fill(0);
    const mask = new Uint8Array(rows * length);
    for (let row = 0; row < rows; row++) {
      mask.set(this.mask.subarray(row * this.length, (row + 1) * this.length), row * length);
      if (hold[row]) continue;
      const chunk = chunks[row]!;
      const pad = width - chunk.length;
      chunk.forEach((token, column) => {
        ids[row * width + pad + column] = token;
        positionIds[row * width + pad + column] = this.positions[row]! + column;
        mask[row * length + this.length + pad + column] = 1;
      });
    }
    const feeds: Record<string, Ort.Tensor> = {
      input_ids: this.indexTensor(ids, [rows, width]),
      attention_mask: this.indexTensor(mask, [rows, length]),
    };
    if (this.layout.hasPositionIds)
      feeds.position_ids = this.indexTensor(positionIds, [rows, width]);
    for (let layer = 0; layer < numLayers; layer++) {
      feeds[`past_key_values.${layer}.key`] = this.past[2 * layer]!;
      feeds[`past_key_values.${layer}.value`] = this.past[2 * layer + 1]!;
    }
    const outputs = await this.run(feeds);
    this.past = [];
    for (let layer = 0; layer < numLayers; layer++) {
      this.past.push(outputs[`present.${layer}.key`]!, outputs[`present.${layer}.value`]!);
    }
    this.mask = mask;
    this.length = length;
    for (let row = 0; row < rows; row++) {
      if (!hold[row]) this.positions[row]! += chunks[row]!.length;
    }
    const all = outputs.logits!.data as Float32Array;
    if (width === 1) return all;
    const logits = new Float32Array(rows * vocabSize);
    for (let row = 0; row < rows; row++) {
      const offset = (row * width + width - 1) * vocabSize;
      logits.set(all.subarray(offset, offset + vocabSize), row * vocabSize);
    }
    return logits;
  }

  keepRows(rows: readonly number[]): void {
    const { numKvHeads, headDim } = this.layout;
    const perRow = numKvHeads * this.length * headDim;
    this.past = this.past.map((tensor) => {
      const data = tensor.data as Float32Array;
      const kept = new Float32Array(rows.length * perRow);
      rows.forEach((row, index) => {
        kept.set(data.subarray(row * perRow, (row + 1) * perRow), index * perRow);
      });
      return new this.ort.Tensor('float32', kept, [rows.length, numKvHeads, this.length, headDim]);
    });
    const mask = new Uint8Array(rows.length * this.length);
    rows.forEach((row, index) => {
      mask.set(this.mask.subarray(row * this.length, (row + 1) * this.length), index * this.length);
    });
    this.mask = mask;
    this.positions = rows.map((row) => this.positions[row]!);
    this.rows = rows.length;
  }
}
