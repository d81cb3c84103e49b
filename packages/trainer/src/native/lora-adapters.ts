/**
 * LoRA adapters of a native model, as Hugging Face PEFT defines them (`LoraConfig`: `r`,
 * `lora_alpha`, `lora_dropout`, `target_modules`, `use_rslora`): per targeted projection of every
 * layer `A` `[r, in]` (Kaiming-uniform with a = √5, PEFT's default init) and `B` `[out, r]`
 * (zeros), scale α / r (α / √r with rsLoRA), trained in their own {@link TrainStore} while the
 * base stays frozen. Tensor names are PEFT's (`base_model.model.model.layers.0.self_attn.q_proj.
 * lora_A.weight`). @internal
 */

import type { NamedTensor } from '@rlvr/core';
import { createRng } from '@rlvr/core';
import { GraphBuilder, OnnxDataType, valueInfo } from '@rlvr/model';
import type { LayerLora, LayerSpec, LoraModule } from './layer-graph.js';
import { LORA_MODULES, moduleShape } from './layer-graph.js';
import type { SessionCache } from './ort-runtime.js';
import type { Slot, SlotBuffers } from './param-store.js';
import { TrainStore } from './train-store.js';

/** Resolved LoRA settings (see `PolicyTrainerOptions.lora`). @internal */
export type LoraSettings = {
  r: number;
  alpha: number;
  dropout: number;
  targetModules: LoraModule[];
  rslora: boolean;
  /** Seed of the adapters' initialization and of the dropout masks. */
  seed: number;
};

/** The Hugging Face module path of a projection (`self_attn.q_proj`, `mlp.down_proj`). */
export function modulePath(module: LoraModule): string {
  return `${module === 'q' || module === 'k' || module === 'v' || module === 'o' ? 'self_attn' : 'mlp'}.${module}_proj`;
}

/** PEFT's tensor name of an adapter matrix. @internal */
export function peftName(layer: number, module: LoraModule, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${modulePath(module)}.lora_${which}.weight`;
}

/** The store slot key of an adapter matrix. @internal */
export const loraSlot = (layer: number, module: LoraModule, which: 'a' | 'b') =>
  `lora.${layer}.${module}.${which}`;

/** The adapters of a model: their settings, slots and store. @internal */
export class LoraAdapters {
  readonly layer: LayerLora;
  readonly slots: Slot[];
  readonly store: TrainStore;

  constructor(
    readonly spec: LayerSpec,
    readonly layers: number,
    readonly settings: LoraSettings,
    initialize = true,
  ) {
    const modules = LORA_MODULES.filter((m) => settings.targetModules.includes(m));
    this.layer = {
      modules,
      r: settings.r,
      scale: settings.rslora ? settings.alpha / Math.sqrt(settings.r) : settings.alpha / settings.r,
      dropout: settings.dropout > 0,
    };
    this.slots = [];
    for (let layer = 0; layer < layers; layer++) {
      for (const module of modules) {
        const [out, input] = moduleShape(spec, module);
        for (const [which, shape] of [
          ['a', [settings.r, input]],
          ['b', [out, settings.r]],
        ] as const) {
          const size = shape[0] * shape[1];
          const name = peftName(layer, module, which === 'a' ? 'A' : 'B');
          this.slots.push({
            key: loraSlot(layer, module, which),
            shape: [...shape],
            size,
            views: [{ name, shape: [...shape], offset: 0, size }],
            decay: true,
          });
        }
      }
    }
    this.store = new TrainStore(this.slots);
    if (initialize) this.initialize();
  }

  /** PEFT's init: A ~ U(−1/√in, 1/√in) (Kaiming-uniform, a = √5), B = 0. */
  private initialize(): void {
    const rng = createRng(this.settings.seed);
    for (const slot of this.slots) {
      if (!slot.key.endsWith('.a')) continue;
      const bound = 1 / Math.sqrt(slot.shape[1]!);
      const data = this.store.weights.get(slot.key);
      for (let i = 0; i < data.length; i++) data[i] = (rng.next() * 2 - 1) * bound;
    }
  }

  /** The adapters as PEFT-named tensors (views). */
  toNamedTensors(): NamedTensor[] {
    return this.store.weights.toNamedTensors();
  }

  /** Loads PEFT-named tensors (all present, same shapes). */
  load(tensors: ReadonlyMap<string, Float32Array>): void {
    this.store.weights.load(tensors);
  }

  /** The feeds of layer `layer`'s adapters, by graph input name. */
  feeds(
    weights: SlotBuffers,
    layer: number,
  ): Record<string, { data: Float32Array; dims: number[] }> {
    const out: Record<string, { data: Float32Array; dims: number[] }> = {};
    for (const module of this.layer.modules) {
      for (const which of ['a', 'b'] as const) {
        const slot = this.slots.find((s) => s.key === loraSlot(layer, module, which))!;
        out[`lora_${module}_${which}`] = { data: weights.get(slot.key), dims: slot.shape };
      }
    }
    return out;
  }

  /**
   * The dropout masks of layer `layer` for `tokens` rows: per module `[tokens, in]` of 0 or
   * 1 / (1 − p), a function of (`seed`, layer, module) only, so a backward that recomputes the
   * forward draws the same ones.
   */
  masks(
    seed: number,
    layer: number,
    tokens: number,
  ): Record<string, { data: Float32Array; dims: number[] }> {
    const out: Record<string, { data: Float32Array; dims: number[] }> = {};
    const p = this.settings.dropout;
    const kept = 1 / (1 - p);
    // keep with probability 1 − p: a 32-bit threshold for xorshift32
    const threshold = Math.floor(p * 2 ** 32);
    this.layer.modules.forEach((module, index) => {
      const input = moduleShape(this.spec, module)[1];
      const data = new Float32Array(tokens * input);
      let state = mix(seed, layer, index);
      for (let i = 0; i < data.length; i++) {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        data[i] = state >>> 0 >= threshold ? kept : 0;
      }
      out[`mask_${module}`] = { data, dims: [tokens, input] };
    });
    return out;
  }

  /**
   * The base weights with the adapters merged (`W + s·B·A` for every targeted projection: new
   * arrays, each one GEMM on `sessions`; the other tensors are the base's views): what a sampler
   * without adapter support samples from.
   */
  merged(base: readonly NamedTensor[], sessions?: SessionCache): NamedTensor[] {
    if (sessions) return this.mergedOnSessions(base, sessions);
    return this.mergedInJs(base);
  }

  private mergedOnSessions(base: readonly NamedTensor[], sessions: SessionCache): NamedTensor[] {
    const { scale } = this.layer;
    const key = `lora-merge|${scale}`;
    const build = () => {
      const g = new GraphBuilder();
      g.add('Gemm', ['b', 'a', 'w'], { alpha: { float: scale }, beta: { float: 1 } }, ['merged']);
      const { FLOAT } = OnnxDataType;
      return g.encode({
        irVersion: 8,
        opset: 17,
        producerName: '@rlvr/trainer lora merge',
        graph: {
          name: 'lora_merge',
          input: [
            valueInfo('w', FLOAT, ['out', 'in']),
            valueInfo('a', FLOAT, ['r', 'in']),
            valueInfo('b', FLOAT, ['out', 'r']),
          ],
          output: [valueInfo('merged', FLOAT)],
        },
      });
    };
    const targets = this.targetsByName();
    return base.map((tensor) => {
      const target = targets.get(tensor.name);
      if (!target) return tensor;
      const { merged } = sessions.run(
        key,
        build,
        {
          w: { data: tensor.data, dims: tensor.shape },
          a: { data: target.a, dims: [this.layer.r, tensor.shape[1]!] },
          b: { data: target.b, dims: [tensor.shape[0]!, this.layer.r] },
        },
        ['merged'],
      );
      return { name: tensor.name, shape: tensor.shape, data: merged! };
    });
  }

  /** The adapter matrices by the Hugging Face name of the projection they adapt. */
  private targetsByName(): Map<string, { a: Float32Array; b: Float32Array }> {
    const weights = this.store.weights;
    const out = new Map<string, { a: Float32Array; b: Float32Array }>();
    for (let layer = 0; layer < this.layers; layer++) {
      for (const module of this.layer.modules) {
        out.set(`model.layers.${layer}.${modulePath(module)}.weight`, {
          a: weights.get(loraSlot(layer, module, 'a')),
          b: weights.get(loraSlot(layer, module, 'b')),
        });
      }
    }
    return out;
  }

  private mergedInJs(base: readonly NamedTensor[]): NamedTensor[] {
    const { r, scale } = this.layer;
    const deltas = this.targetsByName();
    return base.map((tensor) => {
      const delta = deltas.get(tensor.name);
      if (delta === undefined) return tensor;
      const [out, input] = tensor.shape as [number, number];
      const data = Float32Array.from(tensor.data);
      for (let row = 0; row < out; row++) {
        for (let k = 0; k < r; k++) {
          const coefficient = scale * delta.b[row * r + k]!;
          if (coefficient === 0) continue;
          const a = k * input;
          const base = row * input;
          for (let col = 0; col < input; col++)
            data[base + col]! += coefficient * delta.a[a + col]!;
        }
      }
      return { name: tensor.name, shape: tensor.shape, data };
    });
  }
}

/** A 32-bit non-zero state from a seed, a layer and a module index (splitmix-style). */
function mix(seed: number, layer: number, module: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const value of [layer, module]) {
    h = Math.imul(h ^ (value + 0x7f4a7c15), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
  }
  return h === 0 ? 0x6d2b79f5 : h;
}
