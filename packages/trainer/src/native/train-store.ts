/**
 * The trained tensors of the native engine and their optimizer state: per slot (`param-store.ts`)
 * the weights, the gradient and AdamW's two moments, laid out in *shards*, each a
 * `WebAssembly.Memory` of at most 3 GiB (as many as the model needs: the limit is the machine's
 * RAM, not one 4 GiB heap). The four regions of a slot share a shard, so the AdamW step and the
 * gradient norm run in place as WebAssembly SIMD kernels (`wasm/optimizer.wat`, ~1 ns per value
 * here against ~8 ns for the same loop in JS). onnxruntime reads the weights and gradients as
 * views of the shards (no copy). A slot too large for one shard (16 bytes per value over 3 GiB,
 * e.g. a 262k-vocabulary embedding) is kept in plain arrays and updated by the same rule in JS.
 * @internal
 */
import { type Slot, SlotBuffers } from './param-store.js';
import { OPTIMIZER_WASM } from './wasm/optimizer-wasm.js';

/** Largest shard (bytes). */
const SHARD_BYTES = 3 * 2 ** 30;
const PAGE = 65536;

type Kernels = {
  adamw(
    w: number,
    g: number,
    m: number,
    v: number,
    n: number,
    clip: number,
    beta1: number,
    beta2: number,
    c1: number,
    c2: number,
    epsilon: number,
    keep: number,
  ): void;
  sumsq(g: number, n: number): number;
};

let compiled: WebAssembly.Module | undefined;

function kernelsFor(memory: WebAssembly.Memory): Kernels {
  compiled ??= new WebAssembly.Module(Buffer.from(OPTIMIZER_WASM, 'base64'));
  const instance = new WebAssembly.Instance(compiled, { env: { memory } });
  return instance.exports as unknown as Kernels;
}

/** A slot's place: its shard (or none: plain arrays) and the byte offsets of its four regions. */
type Placement = { shard: number; w: number; g: number; m: number; v: number; padded: number };

/** AdamW's settings for one update. @internal */
export type AdamWStep = {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** The global-norm clipping factor applied to every gradient (1: none). */
  clip: number;
  /** The update's number t (1 for the first), for the bias corrections. */
  t: number;
};

/** Trained tensors, gradients and AdamW moments by slot. @internal */
export class TrainStore {
  readonly weights: SlotBuffers;
  readonly grads: SlotBuffers;
  readonly m: SlotBuffers;
  readonly v: SlotBuffers;
  private readonly memories: WebAssembly.Memory[] = [];
  private readonly kernels: Kernels[] = [];
  private readonly placement = new Map<string, Placement>();
  /** Slots whose gradient holds a value since the last {@link TrainStore.clearGrads}. */
  private readonly written = new Set<string>();

  constructor(
    readonly slots: readonly Slot[],
    options: { shardBytes?: number } = {},
  ) {
    const limit = options.shardBytes ?? SHARD_BYTES;
    // first-fit of the slots into shards, in order
    const shardBytes: number[] = [];
    for (const slot of slots) {
      const padded = Math.ceil(slot.size / 4) * 4;
      const bytes = padded * 16;
      if (bytes > limit) {
        this.placement.set(slot.key, { shard: -1, w: 0, g: 0, m: 0, v: 0, padded });
        continue;
      }
      let shard = shardBytes.findIndex((used) => used + bytes <= limit);
      if (shard < 0) {
        shard = shardBytes.length;
        shardBytes.push(0);
      }
      const base = shardBytes[shard]!;
      const region = padded * 4;
      this.placement.set(slot.key, {
        shard,
        w: base,
        g: base + region,
        m: base + 2 * region,
        v: base + 3 * region,
        padded,
      });
      shardBytes[shard] = base + bytes;
    }
    for (const used of shardBytes) {
      const pages = Math.max(1, Math.ceil(used / PAGE));
      const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
      this.memories.push(memory);
      this.kernels.push(kernelsFor(memory));
    }
    const views = (region: 'w' | 'g' | 'm' | 'v') =>
      new Map(
        slots.map((slot) => {
          const place = this.placement.get(slot.key)!;
          if (place.shard < 0) return [slot.key, new Float32Array(slot.size)] as const;
          const buffer = this.memories[place.shard]!.buffer;
          return [slot.key, new Float32Array(buffer, place[region], slot.size)] as const;
        }),
      );
    this.weights = new SlotBuffers(slots, views('w'));
    this.grads = new SlotBuffers(slots, views('g'));
    this.m = new SlotBuffers(slots, views('m'));
    this.v = new SlotBuffers(slots, views('v'));
  }

  /** Bytes held (weights, gradients, moments; shards and plain arrays). */
  get bytes(): number {
    let total = 0;
    for (const memory of this.memories) total += memory.buffer.byteLength;
    for (const slot of this.slots) {
      if (this.placement.get(slot.key)!.shard < 0) total += slot.size * 16;
    }
    return total;
  }

  /** Whether slot `key`'s gradient holds a value in this step. */
  hasGrad(key: string): boolean {
    return this.written.has(key);
  }

  /** Sets slot `key`'s gradient (`values` of the slot's size). */
  setGrad(key: string, values: Float32Array): void {
    this.grads.get(key).set(values);
    this.written.add(key);
  }

  /**
   * The gradient of slot `key` to add into: zeroed on the step's first use (not with `overwrite`:
   * the caller writes every value).
   */
  gradToAdd(key: string, overwrite = false): Float32Array {
    const grad = this.grads.get(key);
    if (!this.written.has(key)) {
      if (!overwrite) grad.fill(0);
      this.written.add(key);
    }
    return grad;
  }

  /** Forgets every gradient (the next step starts from zero). */
  clearGrads(): void {
    this.written.clear();
  }

  /** The global L2 norm of the gradients written in this step (float64 sums). */
  gradNorm(): number {
    let sum = 0;
    for (const slot of this.slots) {
      if (!this.written.has(slot.key)) continue;
      const place = this.placement.get(slot.key)!;
      if (place.shard >= 0) sum += this.kernels[place.shard]!.sumsq(place.g, place.padded);
      else for (const value of this.grads.get(slot.key)) sum += value * value;
    }
    return Math.sqrt(sum);
  }

  /**
   * One AdamW update of every slot from its gradient (a slot without a gradient in this step gets
   * a zero one, as PyTorch's AdamW does for a parameter whose `grad` is zero): PyTorch's rule with
   * decoupled weight decay on the slots that take it.
   */
  adamW(step: AdamWStep): void {
    const { learningRate, beta1, beta2, epsilon, weightDecay, clip, t } = step;
    const c1 = learningRate / (1 - beta1 ** t);
    const c2 = 1 / (1 - beta2 ** t);
    for (const slot of this.slots) {
      if (!this.written.has(slot.key)) this.gradToAdd(slot.key);
      const keep = slot.decay ? 1 - learningRate * weightDecay : 1;
      const place = this.placement.get(slot.key)!;
      if (place.shard >= 0) {
        this.kernels[place.shard]!.adamw(
          place.w,
          place.g,
          place.m,
          place.v,
          place.padded,
          clip,
          beta1,
          beta2,
          c1,
          c2,
          epsilon,
          keep,
        );
        continue;
      }
      const w = this.weights.get(slot.key);
      const g = this.grads.get(slot.key);
      const m = this.m.get(slot.key);
      const v = this.v.get(slot.key);
      for (let i = 0; i < w.length; i++) {
        const gi = Math.fround(g[i]! * clip);
        const mi = Math.fround(beta1 * m[i]! + (1 - beta1) * gi);
        const vi = Math.fround(beta2 * v[i]! + (1 - beta2) * gi * gi);
        m[i] = mi;
        v[i] = vi;
        w[i] = w[i]! * keep - (c1 * mi) / (Math.sqrt(vi * c2) + epsilon);
      }
    }
  }
}
