/**
 * Where the native engine keeps a model's tensors: plain `Float32Array`s in native memory (outside
 * any wasm heap; the limit is the machine's RAM), in Hugging Face's `[out, in]` layout, one buffer
 * per *slot*. A layer's q/k/v projections share one slot (`w_qkv`, their rows stacked) and so do
 * gate/up (`w_gu`): one GEMM each in the graphs. Every Hugging Face tensor is a view of its slot
 * (`toNamedTensors`: no copy), so a checkpoint, a weight snapshot and the sampler's update read
 * the same memory the graphs train. @internal
 */
import type { NamedTensor } from '@rlvr/core';
import { type ModelArchitecture, type ModelConfig, modelArchitecture } from '@rlvr/model';
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

/** The architecture of a config (cached per config object). @internal */
const architectures = new WeakMap<object, ModelArchitecture>();
export function architectureOf(config: ModelConfig): ModelArchitecture {
  let arch = architectures.get(config);
  if (arch === undefined) {
    arch = modelArchitecture(config);
    architectures.set(config, arch);
  }
  return arch;
}

/** The layer shape and rules of a config (@rlvr/model's `modelArchitecture`). @internal */
export function layerSpecOf(config: ModelConfig): LayerSpec {
  const arch = architectureOf(config);
  const layer = arch.layers[0]!;
  return {
    hidden: arch.hiddenSize,
    heads: arch.heads,
    kvHeads: arch.kvHeads,
    headDim: arch.headDim,
    ffn: arch.intermediateSize,
    rmsNormEps: arch.normEps,
    qkvBias: arch.biases.qkv,
    oBias: arch.biases.o,
    normOffset: arch.normOffset,
    activation: arch.activation,
    attentionScale: arch.attentionScale,
    qkNorm: layer.qNorm !== null,
    attentionOutputNorm: layer.attentionOutputNorm !== null,
    mlpOutputNorm: layer.mlpOutputNorm !== null,
  };
}

/** The slot key of a layer tensor. @internal */
export const layerSlot = (layer: number, name: string) => `layers.${layer}.${name}`;

/** The slots of a config, in checkpoint order. @internal */
export function storeSlots(config: ModelConfig): Slot[] {
  const arch = architectureOf(config);
  const d = arch.hiddenSize;
  const v = arch.vocabSize;
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
  slots.push(whole('embed', arch.embedding, [v, d], true));
  const shapes = layerParamShapes(spec);
  for (const layer of arch.layers) {
    const key = (name: string) => layerSlot(layer.index, name);
    for (const name of shapes.keys()) {
      switch (name) {
        case 'ln1':
          slots.push(whole(key(name), layer.attentionNorm, [d], false));
          break;
        case 'ln2':
          slots.push(whole(key(name), layer.mlpNorm, [d], false));
          break;
        case 'q_norm':
          slots.push(whole(key(name), layer.qNorm!, [spec.headDim], false));
          break;
        case 'k_norm':
          slots.push(whole(key(name), layer.kNorm!, [spec.headDim], false));
          break;
        case 'attn_out_norm':
          slots.push(whole(key(name), layer.attentionOutputNorm!, [d], false));
          break;
        case 'mlp_out_norm':
          slots.push(whole(key(name), layer.mlpOutputNorm!, [d], false));
          break;
        case 'w_qkv':
        case 'b_qkv': {
          const kind = name === 'w_qkv' ? 'weight' : 'bias';
          const blocks: [string, number][] = [
            [`${layer.q}.${kind}`, q],
            [`${layer.k}.${kind}`, kv],
            [`${layer.v}.${kind}`, kv],
          ];
          slots.push(stacked(key(name), blocks, kind === 'weight' ? d : 0, kind === 'weight'));
          break;
        }
        case 'w_o':
          slots.push(whole(key(name), `${layer.o}.weight`, [d, q], true));
          break;
        case 'b_o':
          slots.push(whole(key(name), `${layer.o}.bias`, [d], false));
          break;
        case 'w_gu': {
          const f = spec.ffn;
          const blocks: [string, number][] = [
            [`${layer.gate}.weight`, f],
            [`${layer.up}.weight`, f],
          ];
          slots.push(stacked(key(name), blocks, d, true));
          break;
        }
        case 'w_down':
          slots.push(whole(key(name), `${layer.down}.weight`, [d, spec.ffn], true));
          break;
      }
    }
  }
  slots.push(whole('norm', `${arch.finalNorm}`, [d], false));
  if (!arch.tiedEmbeddings) slots.push(whole('head', arch.lmHead, [v, d], true));
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
