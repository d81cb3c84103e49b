import { InvalidArgumentError, ShapeMismatchError, validateOptions } from '@rlvr/core';
import { type Checkpoint, validateCheckpoint } from '../checkpoint/checkpoint.js';
import { llamaBiases } from '../config/llama-config.js';

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

function weight(map: Map<string, Float32Array>, name: string): Float32Array {
  return map.get(name) as Float32Array;
}

/** out[i] = sum_j x[j] * w[i * inDim + j] (+ bias[i]): a PyTorch Linear with weight [out, in]. */
function linear(
  x: Float64Array,
  w: Float32Array,
  bias: Float32Array | undefined,
  inDim: number,
  outDim: number,
): Float64Array {
  const out = new Float64Array(outDim);
  for (let i = 0; i < outDim; i++) {
    let sum = bias ? (bias[i] as number) : 0;
    const offset = i * inDim;
    for (let j = 0; j < inDim; j++) sum += (x[j] as number) * (w[offset + j] as number);
    out[i] = sum;
  }
  return out;
}

function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let sumSquares = 0;
  for (let i = 0; i < x.length; i++) sumSquares += (x[i] as number) ** 2;
  const scale = 1 / Math.sqrt(sumSquares / x.length + eps);
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = (x[i] as number) * scale * (w[i] as number);
  return out;
}

/** Rotates each head of `x` (`heads` × `headDim`, in place) by RoPE at `position` (rotate-half). */
function applyRope(
  x: Float64Array,
  heads: number,
  headDim: number,
  position: number,
  theta: number,
): void {
  const half = headDim / 2;
  for (let i = 0; i < half; i++) {
    const angle = position * theta ** ((-2 * i) / headDim);
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    for (let head = 0; head < heads; head++) {
      const base = head * headDim;
      const a = x[base + i] as number;
      const b = x[base + i + half] as number;
      x[base + i] = a * cos - b * sin;
      x[base + i + half] = b * cos + a * sin;
    }
  }
}

/**
 * The model's forward pass in plain TypeScript, in float64 (weights promoted exactly from float32):
 * the reference every engine is tested against. Slow (no batching tricks); meant for tiny models in
 * tests. Semantics match the exported ONNX graph: causal attention that counts key positions from
 * the start of the cache, keys at padded positions masked out, RoPE at `positionIds`. A query at a
 * padded position sees no key; its attention output is 0 (its logits are not meaningful).
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
  const heads = config.num_attention_heads;
  const headDim = config.head_dim;
  const hidden = config.hidden_size;
  const inter = config.intermediate_size;
  const group = heads / kvHeads;

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

  const map = new Map(tensors.map((tensor) => [tensor.name, tensor.data]));
  const biases = llamaBiases(config);
  const embed = weight(map, 'model.embed_tokens.weight');
  const lmHead = config.tie_word_embeddings ? embed : weight(map, 'lm_head.weight');
  const eps = config.rms_norm_eps;
  const scale = 1 / Math.sqrt(headDim);
  const logits = new Float64Array(batch * sequence * vocab);
  const kvSize = kvHeads * headDim;
  const present = Array.from({ length: layers }, () => ({
    key: {
      dims: [batch, kvHeads, total, headDim],
      data: new Float64Array(batch * kvHeads * total * headDim),
    },
    value: {
      dims: [batch, kvHeads, total, headDim],
      data: new Float64Array(batch * kvHeads * total * headDim),
    },
  }));

  for (let b = 0; b < batch; b++) {
    const ids = inputIds[b] as number[];
    const maskRow = attentionMask[b] as number[];
    const positions = positionIds[b] as number[];
    const states = ids.map((id) => {
      const row = new Float64Array(hidden);
      for (let i = 0; i < hidden; i++) row[i] = embed[id * hidden + i] as number;
      return row;
    });
    for (let layer = 0; layer < layers; layer++) {
      const prefix = `model.layers.${layer}`;
      const wq = weight(map, `${prefix}.self_attn.q_proj.weight`);
      const wk = weight(map, `${prefix}.self_attn.k_proj.weight`);
      const wv = weight(map, `${prefix}.self_attn.v_proj.weight`);
      const wo = weight(map, `${prefix}.self_attn.o_proj.weight`);
      const bq = biases.qkv ? weight(map, `${prefix}.self_attn.q_proj.bias`) : undefined;
      const bk = biases.qkv ? weight(map, `${prefix}.self_attn.k_proj.bias`) : undefined;
      const bv = biases.qkv ? weight(map, `${prefix}.self_attn.v_proj.bias`) : undefined;
      const bo = biases.o ? weight(map, `${prefix}.self_attn.o_proj.bias`) : undefined;
      const { key: presentKey, value: presentValue } = present[layer] as (typeof present)[number];
      // Copy the cache into the present tensors.
      if (past > 0) {
        const pastEntry = (pastKeyValues as KeyValue[])[layer] as KeyValue;
        for (let head = 0; head < kvHeads; head++) {
          for (let t = 0; t < past; t++) {
            const from = ((b * kvHeads + head) * past + t) * headDim;
            const to = ((b * kvHeads + head) * total + t) * headDim;
            for (let d = 0; d < headDim; d++) {
              presentKey.data[to + d] = pastEntry.key.data[from + d] as number;
              presentValue.data[to + d] = pastEntry.value.data[from + d] as number;
            }
          }
        }
      }
      const queries: Float64Array[] = [];
      for (let s = 0; s < sequence; s++) {
        const normed = rmsNorm(
          states[s] as Float64Array,
          weight(map, `${prefix}.input_layernorm.weight`),
          eps,
        );
        const q = linear(normed, wq, bq, hidden, heads * headDim);
        const k = linear(normed, wk, bk, hidden, kvSize);
        const v = linear(normed, wv, bv, hidden, kvSize);
        applyRope(q, heads, headDim, positions[s] as number, config.rope_theta);
        applyRope(k, kvHeads, headDim, positions[s] as number, config.rope_theta);
        queries.push(q);
        for (let head = 0; head < kvHeads; head++) {
          const to = ((b * kvHeads + head) * total + past + s) * headDim;
          for (let d = 0; d < headDim; d++) {
            presentKey.data[to + d] = k[head * headDim + d] as number;
            presentValue.data[to + d] = v[head * headDim + d] as number;
          }
        }
      }
      for (let s = 0; s < sequence; s++) {
        const q = queries[s] as Float64Array;
        const attended = new Float64Array(heads * headDim);
        const queryIndex = past + s;
        for (let head = 0; head < heads; head++) {
          const kvHead = Math.floor(head / group);
          const base = (b * kvHeads + kvHead) * total;
          const scores: number[] = [];
          const keys: number[] = [];
          let max = Number.NEGATIVE_INFINITY;
          for (let t = 0; t <= queryIndex; t++) {
            if (maskRow[t] === 0) continue;
            let dot = 0;
            const offset = (base + t) * headDim;
            for (let d = 0; d < headDim; d++) {
              dot += (q[head * headDim + d] as number) * (presentKey.data[offset + d] as number);
            }
            const score = dot * scale;
            scores.push(score);
            keys.push(t);
            if (score > max) max = score;
          }
          let denominator = 0;
          for (let i = 0; i < scores.length; i++) {
            const weightValue = Math.exp((scores[i] as number) - max);
            scores[i] = weightValue;
            denominator += weightValue;
          }
          for (let i = 0; i < scores.length; i++) {
            const p = (scores[i] as number) / denominator;
            const offset = (base + (keys[i] as number)) * headDim;
            for (let d = 0; d < headDim; d++) {
              attended[head * headDim + d] =
                (attended[head * headDim + d] as number) +
                p * (presentValue.data[offset + d] as number);
            }
          }
        }
        const projected = linear(attended, wo, bo, heads * headDim, hidden);
        const state = states[s] as Float64Array;
        for (let i = 0; i < hidden; i++) state[i] = (state[i] as number) + (projected[i] as number);
      }
      const wGate = weight(map, `${prefix}.mlp.gate_proj.weight`);
      const wUp = weight(map, `${prefix}.mlp.up_proj.weight`);
      const wDown = weight(map, `${prefix}.mlp.down_proj.weight`);
      const postNorm = weight(map, `${prefix}.post_attention_layernorm.weight`);
      for (let s = 0; s < sequence; s++) {
        const state = states[s] as Float64Array;
        const normed = rmsNorm(state, postNorm, eps);
        const gate = linear(normed, wGate, undefined, hidden, inter);
        const up = linear(normed, wUp, undefined, hidden, inter);
        for (let i = 0; i < inter; i++) {
          const g = gate[i] as number;
          gate[i] = (g / (1 + Math.exp(-g))) * (up[i] as number);
        }
        const down = linear(gate, wDown, undefined, inter, hidden);
        for (let i = 0; i < hidden; i++) state[i] = (state[i] as number) + (down[i] as number);
      }
    }
    const finalNorm = weight(map, 'model.norm.weight');
    for (let s = 0; s < sequence; s++) {
      const normed = rmsNorm(states[s] as Float64Array, finalNorm, eps);
      const row = linear(normed, lmHead, undefined, hidden, vocab);
      logits.set(row, (b * sequence + s) * vocab);
    }
  }
  return { logits: { dims: [batch, sequence, vocab], data: logits }, presentKeyValues: present };
}
