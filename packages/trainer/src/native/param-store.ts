/**
 * Where the native engine keeps a model's tensors: plain `Float32Array`s in native memory (outside
 * any wasm heap; the limit is the machine's RAM), in Hugging Face's `[out, in]` layout, one buffer
 * per *slot*. A layer's q/k/v projections share one slot (`w_qkv`, their rows stacked) and so do
 * gate/up (`w_gu`): one GEMM each in the graphs. Every Hugging Face tensor is a view of its slot
 * (`toNamedTensors`: no copy), so a checkpoint, a weight snapshot and the sampler's update read
 * the same memory the graphs train. @internal
 */
import type { NamedTensor } from '@rlvr/core';
import { type LlamaConfig, llamaBiases } from '@rlvr/model';
import { type LayerSpec, layerParamShapes } from './layer-graph.js';

/** One Hugging Face tensor inside a slot: rows `[offset, offset + size)` (elements). @internal */
export type SlotView = { name: string; shape: number[]; offset: number; size: number };

/** A buffer of the store and the Hugging Face tensors it holds. @internal */
export type Slot = {
  key: string;
  shape: number[];
  size: number;
  views: SlotView[];
  /** AdamW's decoupled weight decay applies (not to norms and biases, as Hugging Face). */
  decay: boolean;
};

const product = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** The layer shape of a config. @internal */
export function layerSpecOf(config: LlamaConfig): LayerSpec {
  const biases = llamaBiases(config);
  return {
    hidden: config.hidden_size,
    heads: config.num_attention_heads,
    kvHeads: config.num_key_value_heads,
    headDim: config.head_dim,
    ffn: config.intermediate_size,
    rmsNormEps: config.rms_norm_eps,
    qkvBias: biases.qkv,
    oBias: biases.o,
  };
}

/** The slot key of a layer tensor. @internal */
export const layerSlot = (layer: number, name: string) => `layers.${layer}.${name}`;

/** The slots of a config, in checkpoint order. @internal */
export function storeSlots(config: LlamaConfig): Slot[] {
  const d = config.hidden_size;
  const v = config.vocab_size;
  const spec = layerSpecOf(config);
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const slots: Slot[] = [];
  const whole = (key: string, name: string, shape: number[], decay: boolean): Slot => ({
    key,
    shape,
    size: product(shape),
    views: [{ name, shape, offset: 0, size: product(shape) }],
    decay,
  });
  /** A slot of stacked row blocks `[rows_i, cols]` (or 1-D blocks when `cols` is 0). */
  const stacked = (key: string, blocks: [string, number][], cols: number, decay: boolean): Slot => {
    const views: SlotView[] = [];
    let offset = 0;
    for (const [name, rows] of blocks) {
      const shape = cols === 0 ? [rows] : [rows, cols];
      views.push({ name, shape, offset, size: product(shape) });
      offset += product(shape);
    }
    const rows = blocks.reduce((sum, [, r]) => sum + r, 0);
    return { key, shape: cols === 0 ? [rows] : [rows, cols], size: offset, views, decay };
  };
  slots.push(whole('embed', 'model.embed_tokens.weight', [v, d], true));
  const shapes = layerParamShapes(spec);
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const p = `model.layers.${layer}`;
    const key = (name: string) => layerSlot(layer, name);
    for (const name of shapes.keys()) {
      switch (name) {
        case 'ln1':
          slots.push(whole(key(name), `${p}.input_layernorm.weight`, [d], false));
          break;
        case 'ln2':
          slots.push(whole(key(name), `${p}.post_attention_layernorm.weight`, [d], false));
          break;
        case 'w_qkv':
        case 'b_qkv': {
          const kind = name === 'w_qkv' ? 'weight' : 'bias';
          const blocks: [string, number][] = [
            [`${p}.self_attn.q_proj.${kind}`, q],
            [`${p}.self_attn.k_proj.${kind}`, kv],
            [`${p}.self_attn.v_proj.${kind}`, kv],
          ];
          slots.push(stacked(key(name), blocks, kind === 'weight' ? d : 0, kind === 'weight'));
          break;
        }
        case 'w_o':
          slots.push(whole(key(name), `${p}.self_attn.o_proj.weight`, [d, q], true));
          break;
        case 'b_o':
          slots.push(whole(key(name), `${p}.self_attn.o_proj.bias`, [d], false));
          break;
        case 'w_gu': {
          const f = config.intermediate_size;
          const blocks: [string, number][] = [
            [`${p}.mlp.gate_proj.weight`, f],
            [`${p}.mlp.up_proj.weight`, f],
          ];
          slots.push(stacked(key(name), blocks, d, true));
          break;
        }
        case 'w_down':
          slots.push(
            whole(key(name), `${p}.mlp.down_proj.weight`, [d, config.intermediate_size], true),
          );
          break;
      }
    }
  }
  slots.push(whole('norm', 'model.norm.weight', [d], false));
  if (!config.tie_word_embeddings) slots.push(whole('head', 'lm_head.weight', [v, d], true));
  return slots;
}

/** Buffers by slot key, one per slot of a layout. @internal */
export class SlotBuffers {
  readonly buffers: Map<string, Float32Array>;

  constructor(
    readonly slots: readonly Slot[],
    buffers?: Map<string, Float32Array>,
  ) {
    this.buffers = buffers ?? new Map(slots.map((slot) => [slot.key, new Float32Array(slot.size)]));
  }

  get(key: string): Float32Array {
    return this.buffers.get(key)!;
  }

  /** Number of float32 values. */
  get size(): number {
    return this.slots.reduce((sum, slot) => sum + slot.size, 0);
  }

  /** The Hugging Face tensors as views of the buffers (no copy), in checkpoint order. */
  toNamedTensors(): NamedTensor[] {
    const out: NamedTensor[] = [];
    for (const slot of this.slots) {
      const buffer = this.get(slot.key);
      for (const view of slot.views) {
        out.push({
          name: view.name,
          shape: [...view.shape],
          data: buffer.subarray(view.offset, view.offset + view.size),
        });
      }
    }
    return out;
  }

  /** Copies Hugging Face tensors (same names and shapes, all present) into the buffers. */
  load(tensors: ReadonlyMap<string, Float32Array>): void {
    for (const slot of this.slots) {
      const buffer = this.get(slot.key);
      for (const view of slot.views) buffer.set(tensors.get(view.name)!, view.offset);
    }
  }

  /** A copy of every buffer. */
  clone(): SlotBuffers {
    return new SlotBuffers(
      this.slots,
      new Map([...this.buffers].map(([key, data]) => [key, Float32Array.from(data)])),
    );
  }
}
