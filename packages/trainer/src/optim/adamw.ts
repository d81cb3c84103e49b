import * as tf from '@tensorflow/tfjs-core';
import { ADAMW_DEFAULTS } from '../defaults.js';
import type { AdamWOptions } from './optimizer-options.js';

export type { AdamWOptions } from './optimizer-options.js';

/** Optimizer state as plain data (for checkpoints). */
export type AdamWState = {
  step: number;
  moments: { name: string; shape: number[]; m: Float32Array; v: Float32Array }[];
  /**
   * Layout of the projection moments (`*_proj.weight`, `lm_head.weight`): `hf` — Hugging Face's
   * `[out, in]` (the native engine) — or `in-out` (the tfjs engine's transposed weights). Absent:
   * `in-out` (states written before the native engine). Either engine restores either layout.
   */
  layout?: 'hf' | 'in-out';
};

/** Whether `name` is a projection weight (held transposed by the tfjs engine). @internal */
export function isProjectionWeight(name: string): boolean {
  return name.endsWith('_proj.weight') || name === 'lm_head.weight';
}

/** `[rows, cols]` row-major → its transpose. @internal */
export function transposed(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  }
  return out;
}

/** True for parameters that get no weight decay (biases and RMSNorm gains), as in Hugging Face. */
export function isNoDecayParameter(name: string): boolean {
  return name.endsWith('.bias') || name.endsWith('norm.weight');
}

/**
 * AdamW (Loshchilov & Hutter) exactly as PyTorch's `torch.optim.AdamW` updates:
 * `p ← p·(1 − lr·λ)`, `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
 * `p ← p − lr · (m / (1−β₁ᵗ)) / (√(v / (1−β₂ᵗ)) + ε)`. @internal
 */
export class AdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
  /** Number of updates applied so far. */
  step = 0;
  private readonly m = new Map<string, tf.Tensor>();
  private readonly v = new Map<string, tf.Tensor>();

  constructor(options: AdamWOptions = {}) {
    const betas = options.betas ?? ADAMW_DEFAULTS.betas;
    this.beta1 = betas[0];
    this.beta2 = betas[1];
    this.epsilon = options.epsilon ?? ADAMW_DEFAULTS.epsilon;
    this.weightDecay = options.weightDecay ?? ADAMW_DEFAULTS.weightDecay;
  }

  /** The first and second moments by parameter name (absent before a parameter's first update). */
  moments(): { m: ReadonlyMap<string, tf.Tensor>; v: ReadonlyMap<string, tf.Tensor> } {
    return { m: this.m, v: this.v };
  }

  /**
   * Takes the moments of an update computed elsewhere (the onnxruntime train-step graph, the same
   * rule as {@link apply}) and counts the step; the previous moments are disposed.
   */
  adopt(m: ReadonlyMap<string, tf.Tensor>, v: ReadonlyMap<string, tf.Tensor>): void {
    this.step += 1;
    for (const [target, next] of [
      [this.m, m],
      [this.v, v],
    ] as const) {
      for (const [name, tensor] of next) {
        const old = target.get(name);
        if (old !== undefined && old !== tensor) old.dispose();
        target.set(name, tensor);
      }
    }
  }

  /** Returns the updated parameters (new tensors); the caller swaps them in. */
  apply(
    params: ReadonlyMap<string, tf.Tensor>,
    grads: ReadonlyMap<string, tf.Tensor>,
    learningRate: number,
  ): Map<string, tf.Tensor> {
    this.step += 1;
    const { beta1, beta2, epsilon } = this;
    const correction1 = 1 - beta1 ** this.step;
    const correction2 = 1 - beta2 ** this.step;
    const next = new Map<string, tf.Tensor>();
    for (const [name, param] of params) {
      const grad = grads.get(name)!;
      const [updated, m, v] = tf.tidy(() => {
        const mPrev = this.m.get(name);
        const vPrev = this.v.get(name);
        const m = mPrev
          ? tf.add(tf.mul(mPrev, beta1), tf.mul(grad, 1 - beta1))
          : tf.mul(grad, 1 - beta1);
        const v = vPrev
          ? tf.add(tf.mul(vPrev, beta2), tf.mul(tf.square(grad), 1 - beta2))
          : tf.mul(tf.square(grad), 1 - beta2);
        const decay = isNoDecayParameter(name) ? 0 : this.weightDecay;
        const decayed = decay > 0 ? tf.mul(param, 1 - learningRate * decay) : param;
        const denominator = tf.add(tf.sqrt(tf.div(v, correction2)), epsilon);
        const update = tf.div(tf.mul(m, learningRate / correction1), denominator);
        return [tf.sub(decayed, update), m, v];
      });
      this.m.get(name)?.dispose();
      this.v.get(name)?.dispose();
      this.m.set(name, m);
      this.v.set(name, v);
      next.set(name, updated);
    }
    return next;
  }

  /** The state as plain data. */
  getState(): AdamWState {
    const moments: AdamWState['moments'] = [];
    for (const [name, m] of this.m) {
      moments.push({
        name,
        shape: [...m.shape],
        m: Float32Array.from(m.dataSync() as Float32Array),
        v: Float32Array.from(this.v.get(name)!.dataSync() as Float32Array),
      });
    }
    return { step: this.step, moments, layout: 'in-out' };
  }

  /** Restores {@link AdamW.getState} output. */
  setState(state: AdamWState): void {
    this.dispose();
    this.step = state.step;
    // moments in Hugging Face's layout (a native-engine state): transposed into ours
    const flip = state.layout === 'hf';
    for (const moment of state.moments) {
      const turn = flip && isProjectionWeight(moment.name) && moment.shape.length === 2;
      const [rows, cols] = moment.shape as [number, number];
      const shape = turn ? [cols, rows] : moment.shape;
      const m = turn ? transposed(moment.m, rows, cols) : moment.m;
      const v = turn ? transposed(moment.v, rows, cols) : moment.v;
      this.m.set(moment.name, tf.tensor(m, shape));
      this.v.set(moment.name, tf.tensor(v, shape));
    }
  }

  /** Frees the moment tensors. */
  dispose(): void {
    for (const tensor of this.m.values()) tensor.dispose();
    for (const tensor of this.v.values()) tensor.dispose();
    this.m.clear();
    this.v.clear();
  }
}
