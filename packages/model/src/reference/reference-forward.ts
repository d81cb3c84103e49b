import { InvalidArgumentError, ShapeMismatchError, validateOptions } from '@rlvr/core';
import { type Checkpoint, validateCheckpoint } from '../checkpoint/checkpoint.js';
import { type ModelArchitecture, modelArchitecture } from '../config/architecture.js';
import { applyRope, geluTanh, linear, rmsNorm, silu } from './reference-ops.js';

/** A dense row-major tensor of float64 values. */
export type Float64Tensor = { dims: number[]; data: Float64Array };

/** One layer's cached keys and values, each `[batch, num_key_value_heads, length, head_dim]`. */
export type KeyValue = {
  key: { dims: number[]; data: Float64Array | Float32Array };
  value: { dims: number[]; data: Float64Array | Float32Array };
};

/** Inputs of {@link referenceForward} (the same meaning as the ONNX graph's inputs). */
export type ReferenceForwardInput = {
  /** Token ids, `[batch][sequence]` (all rows the same length). */
  inputIds: number[][];
  /**
   * 1 for real tokens, 0 for padding, `[batch][past + sequence]` (covers the cached positions too,
   * as in Hugging Face). Default: all ones.
   */
  attentionMask?: number[][];
  /**
   * Rotary positions of the new tokens, `[batch][sequence]`. Default: Hugging Face's generation rule
   * `cumsum(attentionMask) − 1` (1 at padded slots), or `past … past + sequence − 1` without a mask.
   */
  positionIds?: number[][];
  /** Cached keys/values from an earlier call, one per layer (`present` of that call). */
  pastKeyValues?: KeyValue[];
};

/** Outputs of {@link referenceForward}. */
export type ReferenceForwardResult = {
  /** Logits `[batch, sequence, vocab_size]` in float64. */
  logits: Float64Tensor;
  /** Keys/values of past + new tokens, one per layer, `[batch, kv_heads, past + sequence, head_dim]`. */
  presentKeyValues: { key: Float64Tensor; value: Float64Tensor }[];
};

/**
 * Hugging Face's default position ids for (possibly left-padded) rows: `cumsum(mask) − 1`, with 1 at
 * padded positions, keeping the last `sequenceLength` columns.
 *
 * @example
 * ```ts
 * defaultPositionIds([[0, 0, 1, 1, 1]], 5); // [[1, 1, 0, 1, 2]]
 * ```
 */
export function defaultPositionIds(attentionMask: number[][], sequenceLength: number): number[][] {
  return attentionMask.map((row) => {
    const positions: number[] = [];
    let count = 0;
    for (const value of row) {
      count += value;
      positions.push(value === 0 ? 1 : count - 1);
    }
    return positions.slice(row.length - sequenceLength);
  });
}

const functionName = 'referenceForward';

function validateIntegerMatrix(
  value: unknown,
  parameter: string,
  rows: number,
  columns: number | undefined,
  check: (item: number) => boolean,
  expectedItem: string,
): number[][] {
  if (!Array.isArray(value) || (rows >= 0 && value.length !== rows)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value,
      expected: rows >= 0 ? `an array of ${rows} rows` : 'a non-empty array of rows',
    });
  }
  const width = columns ?? (value[0] as unknown[] | undefined)?.length;
  for (const [row, items] of value.entries()) {
    if (!Array.isArray(items) || items.length !== width || width === 0) {
      throw new ShapeMismatchError({
        parameter: `${parameter}[${row}]`,
        functionName,
        expected: `a non-empty array of length ${width}`,
        actual: Array.isArray(items) ? `length ${items.length}` : typeof items,
      });
    }
    for (const [column, item] of items.entries()) {
      if (typeof item !== 'number' || !Number.isInteger(item) || !check(item)) {
        throw new InvalidArgumentError({
          parameter: `${parameter}[${row}][${column}]`,
          functionName,
          value: item,
          expected: expectedItem,
        });
      }
    }
  }
  return value as number[][];
}

/**
 * The model's forward pass in plain TypeScript, in float64 (weights promoted exactly from float32):
 * the reference every engine is tested against. Slow (no batching tricks); meant for tiny models in
 * tests. Every family's rules come from {@link modelArchitecture} (norm offset, q/k norms, Gemma 3's
 * extra norms, GeGLU, embedding and attention scales, per-layer RoPE and sliding windows).
 * Semantics match the exported ONNX graph: causal attention that counts key positions from the
 * start of the cache (a sliding layer sees key `j` from query `i` only if `i − j < window`), keys at
 * padded positions masked out, RoPE at `positionIds`. A query at a padded position sees no key; its
 * attention output is 0 (its logits are not meaningful).
 *
 * @example
 * ```ts
 * const first = referenceForward(checkpoint, { inputIds: [[1, 2, 3]] });
 * const next = referenceForward(checkpoint, {
 *   inputIds: [[4]], pastKeyValues: first.presentKeyValues });
 * // next.logits equals the last row of referenceForward(checkpoint, { inputIds: [[1, 2, 3, 4]] })
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} naming the input that is malformed
 * (token id out of range, mask of the wrong length, cache of the wrong shape, …).
 */
export function referenceForward(
  checkpoint: Checkpoint,
  input: ReferenceForwardInput,
): ReferenceForwardResult {
  return referenceForwardWith(checkpoint, input, {});
}

/** Numeric choices of {@link referenceForwardWith} (tests emulate another engine's rounding). @internal */
export type ReferenceOptions = {
  /** Replaces the tanh GELU of `gelu_tanh` models (e.g. llama.cpp's fp16 lookup table). */
  gelu?: (x: number) => number;
  /** Edits the model's description before the run (negative controls drop one family rule). */
  architecture?: (architecture: ModelArchitecture) => ModelArchitecture;
};

/** {@link referenceForward} with {@link ReferenceOptions}. @internal */
export function referenceForwardWith(
  checkpoint: Checkpoint,
  input: ReferenceForwardInput,
  options: ReferenceOptions,
): ReferenceForwardResult {
  const { config, tensors } = validateCheckpoint(checkpoint, { functionName, checkFinite: false });
  const opts = validateOptions<ReferenceForwardInput>(input, {
    parameter: 'input',
    functionName,
    known: ['inputIds', 'attentionMask', 'positionIds', 'pastKeyValues'],
  });
  const vocab = config.vocab_size;
  const inputIds = validateIntegerMatrix(
    opts.inputIds,
    'input.inputIds',
    -1,
    undefined,
    (id) => id >= 0 && id < vocab,
    `a token id in [0, ${vocab})`,
  );
  const batch = inputIds.length;
  if (batch === 0) {
    throw new InvalidArgumentError({
      parameter: 'input.inputIds',
      functionName,
      value: inputIds,
      expected: 'at least one row',
    });
  }
  const sequence = (inputIds[0] as number[]).length;
  const layers = config.num_hidden_layers;
  const kvHeads = config.num_key_value_heads;
  const headDim = config.head_dim;

  let past = 0;
  const pastKeyValues = opts.pastKeyValues;
  if (pastKeyValues !== undefined) {
    if (!Array.isArray(pastKeyValues) || pastKeyValues.length !== layers) {
      throw new InvalidArgumentError({
        parameter: 'input.pastKeyValues',
        functionName,
        value: pastKeyValues,
        expected: `an array of ${layers} { key, value } entries (one per layer)`,
      });
    }
    past = (pastKeyValues[0]?.key?.dims?.[2] as number | undefined) ?? -1;
    for (const [layer, entry] of pastKeyValues.entries()) {
      for (const part of ['key', 'value'] as const) {
        const tensor = entry?.[part];
        const dims = tensor?.dims;
        const ok =
          Array.isArray(dims) &&
          dims.length === 4 &&
          dims[0] === batch &&
          dims[1] === kvHeads &&
          dims[2] === past &&
          dims[3] === headDim &&
          (tensor.data instanceof Float64Array || tensor.data instanceof Float32Array) &&
          tensor.data.length === batch * kvHeads * past * headDim;
        if (!ok) {
          throw new ShapeMismatchError({
            parameter: `input.pastKeyValues[${layer}].${part}`,
            functionName,
            expected: `dims [${batch}, ${kvHeads}, ${past}, ${headDim}] with matching data`,
            actual: Array.isArray(dims) ? `dims [${dims.join(', ')}]` : 'no dims',
          });
        }
      }
    }
  }
  const total = past + sequence;
  const attentionMask =
    opts.attentionMask === undefined
      ? inputIds.map(() => new Array<number>(total).fill(1))
      : validateIntegerMatrix(
          opts.attentionMask,
          'input.attentionMask',
          batch,
          total,
          (value) => value === 0 || value === 1,
          '0 or 1',
        );
  const positionIds =
    opts.positionIds === undefined
      ? opts.attentionMask === undefined
        ? inputIds.map(() => Array.from({ length: sequence }, (_, index) => past + index))
        : defaultPositionIds(attentionMask, sequence)
      : validateIntegerMatrix(
          opts.positionIds,
          'input.positionIds',
          batch,
          sequence,
          (value) => value >= 0,
          'a non-negative position',
        );

  return computeForward(
    { config, tensors },
    { inputIds, attentionMask, positionIds, past, pastKeyValues },
    options,
  );
}

type Inputs = {
  inputIds: number[][];
  attentionMask: number[][];
  positionIds: number[][];
  past: number;
  pastKeyValues: KeyValue[] | undefined;
};

type Present = ReferenceForwardResult['presentKeyValues'];

/** The forward pass over validated inputs, one row at a time. */
function computeForward(
  checkpoint: Checkpoint,
  inputs: Inputs,
  options: ReferenceOptions,
): ReferenceForwardResult {
  const described = modelArchitecture(checkpoint.config);
  const arch = options.architecture ? options.architecture(described) : described;
  const map = new Map(checkpoint.tensors.map((tensor) => [tensor.name, tensor.data]));
  const weight = (name: string) => map.get(name) as Float32Array;
  const { inputIds, past } = inputs;
  const batch = inputIds.length;
  const sequence = (inputIds[0] as number[]).length;
  const total = past + sequence;
  const { kvHeads, headDim, hiddenSize: hidden, vocabSize: vocab } = arch;
  const cacheSize = batch * kvHeads * total * headDim;
  const present: Present = arch.layers.map(() => ({
    key: { dims: [batch, kvHeads, total, headDim], data: new Float64Array(cacheSize) },
    value: { dims: [batch, kvHeads, total, headDim], data: new Float64Array(cacheSize) },
  }));
  const logits = new Float64Array(batch * sequence * vocab);
  const embed = weight(arch.embedding);
  const lmHead = weight(arch.lmHead);
  const finalNorm = weight(arch.finalNorm);
  for (let b = 0; b < batch; b++) {
    const states = (inputIds[b] as number[]).map((id) => {
      const row = new Float64Array(hidden);
      for (let i = 0; i < hidden; i++)
        row[i] = (embed[id * hidden + i] as number) * arch.embeddingScale;
      return row;
    });
    for (const layer of arch.layers) {
      copyPast(inputs, present[layer.index] as Present[number], layer.index, b, kvHeads, headDim);
      attentionBlock(arch, layer.index, weight, states, inputs, present, b, total);
      mlpBlock(arch, layer.index, weight, states, options);
    }
    for (let s = 0; s < sequence; s++) {
      const normed = rmsNorm(states[s] as Float64Array, finalNorm, arch.normEps, arch.normOffset);
      logits.set(linear(normed, lmHead, undefined, hidden, vocab), (b * sequence + s) * vocab);
    }
  }
  return { logits: { dims: [batch, sequence, vocab], data: logits }, presentKeyValues: present };
}

/** Copies row `b`'s cached keys and values of one layer into the present tensors. */
function copyPast(
  inputs: Inputs,
  target: Present[number],
  layer: number,
  b: number,
  kvHeads: number,
  headDim: number,
): void {
  const { past } = inputs;
  if (past === 0) return;
  const entry = (inputs.pastKeyValues as KeyValue[])[layer] as KeyValue;
  const total = target.key.dims[2] as number;
  for (let head = 0; head < kvHeads; head++) {
    for (let t = 0; t < past; t++) {
      const from = ((b * kvHeads + head) * past + t) * headDim;
      const to = ((b * kvHeads + head) * total + t) * headDim;
      for (let d = 0; d < headDim; d++) {
        target.key.data[to + d] = entry.key.data[from + d] as number;
        target.value.data[to + d] = entry.value.data[from + d] as number;
      }
    }
  }
}

/** Norm, q/k/v (+ q/k norm, RoPE), attention with the layer's window, o_proj (+ norm), residual. */
function attentionBlock(
  arch: ModelArchitecture,
  index: number,
  weight: (name: string) => Float32Array,
  states: Float64Array[],
  inputs: Inputs,
  present: Present,
  b: number,
  total: number,
): void {
  const layer = arch.layers[index] as ModelArchitecture['layers'][number];
  const { heads, kvHeads, headDim, hiddenSize: hidden, normEps: eps, normOffset: offset } = arch;
  const { qkv, o } = arch.biases;
  const bias = (name: string, has: boolean) => (has ? weight(`${name}.bias`) : undefined);
  const { key: presentKey, value: presentValue } = present[index] as Present[number];
  const maskRow = inputs.attentionMask[b] as number[];
  const positions = inputs.positionIds[b] as number[];
  const kvSize = kvHeads * headDim;
  const queries = states.map((state, s) => {
    const normed = rmsNorm(state, weight(layer.attentionNorm), eps, offset);
    let q = linear(
      normed,
      weight(`${layer.q}.weight`),
      bias(layer.q, qkv),
      hidden,
      heads * headDim,
    );
    let k = linear(normed, weight(`${layer.k}.weight`), bias(layer.k, qkv), hidden, kvSize);
    const v = linear(normed, weight(`${layer.v}.weight`), bias(layer.v, qkv), hidden, kvSize);
    if (layer.qNorm) q = rmsNorm(q, weight(layer.qNorm), eps, offset);
    if (layer.kNorm) k = rmsNorm(k, weight(layer.kNorm), eps, offset);
    if (layer.rope.kind === 'rotary') {
      applyRope(q, heads, headDim, positions[s] as number, layer.rope.inverseFrequencies);
      applyRope(k, kvHeads, headDim, positions[s] as number, layer.rope.inverseFrequencies);
    }
    for (let head = 0; head < kvHeads; head++) {
      const to = ((b * kvHeads + head) * total + inputs.past + s) * headDim;
      for (let d = 0; d < headDim; d++) {
        presentKey.data[to + d] = k[head * headDim + d] as number;
        presentValue.data[to + d] = v[head * headDim + d] as number;
      }
    }
    return q;
  });
  const group = heads / kvHeads;
  for (const [s, q] of queries.entries()) {
    const attended = new Float64Array(heads * headDim);
    const queryIndex = inputs.past + s;
    const first = layer.window === null ? 0 : Math.max(0, queryIndex - layer.window + 1);
    for (let head = 0; head < heads; head++) {
      const base = (b * kvHeads + Math.floor(head / group)) * total;
      const scores: number[] = [];
      const keys: number[] = [];
      let max = Number.NEGATIVE_INFINITY;
      for (let t = first; t <= queryIndex; t++) {
        if (maskRow[t] === 0) continue;
        let dot = 0;
        const offsetKey = (base + t) * headDim;
        for (let d = 0; d < headDim; d++) {
          dot += (q[head * headDim + d] as number) * (presentKey.data[offsetKey + d] as number);
        }
        const score = dot * arch.attentionScale;
        scores.push(score);
        keys.push(t);
        if (score > max) max = score;
      }
      let denominator = 0;
      for (let i = 0; i < scores.length; i++) {
        scores[i] = Math.exp((scores[i] as number) - max);
        denominator += scores[i] as number;
      }
      for (let i = 0; i < scores.length; i++) {
        const p = (scores[i] as number) / denominator;
        const offsetValue = (base + (keys[i] as number)) * headDim;
        for (let d = 0; d < headDim; d++) {
          attended[head * headDim + d] =
            (attended[head * headDim + d] as number) +
            p * (presentValue.data[offsetValue + d] as number);
        }
      }
    }
    let projected = linear(
      attended,
      weight(`${layer.o}.weight`),
      bias(layer.o, o),
      heads * headDim,
      hidden,
    );
    if (layer.attentionOutputNorm) {
      projected = rmsNorm(projected, weight(layer.attentionOutputNorm), eps, offset);
    }
    const state = states[s] as Float64Array;
    for (let i = 0; i < hidden; i++) state[i] = (state[i] as number) + (projected[i] as number);
  }
}

/** Norm, gated MLP (SwiGLU or GeGLU) (+ output norm), residual. */
function mlpBlock(
  arch: ModelArchitecture,
  index: number,
  weight: (name: string) => Float32Array,
  states: Float64Array[],
  options: ReferenceOptions,
): void {
  const layer = arch.layers[index] as ModelArchitecture['layers'][number];
  const { hiddenSize: hidden, intermediateSize: inter, normEps: eps, normOffset: offset } = arch;
  const activation = arch.activation === 'silu' ? silu : (options.gelu ?? geluTanh);
  for (const state of states) {
    const normed = rmsNorm(state, weight(layer.mlpNorm), eps, offset);
    const gate = linear(normed, weight(`${layer.gate}.weight`), undefined, hidden, inter);
    const up = linear(normed, weight(`${layer.up}.weight`), undefined, hidden, inter);
    for (let i = 0; i < inter; i++) gate[i] = activation(gate[i] as number) * (up[i] as number);
    let down = linear(gate, weight(`${layer.down}.weight`), undefined, inter, hidden);
    if (layer.mlpOutputNorm) down = rmsNorm(down, weight(layer.mlpOutputNorm), eps, offset);
    for (let i = 0; i < hidden; i++) state[i] = (state[i] as number) + (down[i] as number);
  }
}
