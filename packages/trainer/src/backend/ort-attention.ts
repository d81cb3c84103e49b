import type { GraphBuilder } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import { encodeGraph } from './ort-graph.js';
import { ortMatMulActive, runOrtGraph } from './ort-matmul.js';

/** Name of the fused attention kernel (forward and backward) registered for wasm. */
export const ORT_ATTENTION = 'RlvrOrtAttention';

/** Head layout of one attention layer (batch and sequence length come from the tensors). */
export type AttentionShape = { heads: number; kvHeads: number; headDim: number };

type Attrs = AttentionShape & { batch: number; seq: number; backward: boolean };

/** Nodes shared by forward and backward: rotary embedding and head layouts. */
class AttentionNodes {
  readonly g: GraphBuilder;
  readonly s: AttentionShape;
  readonly group: number;
  constructor(g: GraphBuilder, shape: AttentionShape) {
    this.g = g;
    this.s = shape;
    this.group = shape.heads / shape.kvHeads;
  }
  reshape(x: string, shape: number[]): string {
    return this.g.op('Reshape', [x, this.g.int64(shape)]);
  }
  transpose(x: string, perm: number[]): string {
    return this.g.op('Transpose', [x], { perm });
  }
  /** `[a, b]` halves of the last axis. */
  halves(x: string): [string, string] {
    const half = this.s.headDim / 2;
    const [a, b] = this.g.add('Split', [x, this.g.int64([half, half])], { axis: 3 }, 2);
    return [a!, b!];
  }
  /** `x·cos + rotate_half(x)·sin`, rotate_half([a, b]) = [−b, a]; x `[B, T, h, d]`. */
  rope(x: string): string {
    const { g } = this;
    const [a, b] = this.halves(x);
    const rotated = g.op('Concat', [g.op('Neg', [b]), a], { axis: 3 });
    return g.op('Add', [g.op('Mul', [x, 'cos']), g.op('Mul', [rotated, 'sin'])]);
  }
  /** The adjoint of {@link rope}: `x·cos + rotate_halfᵀ(x·sin)`, rotate_halfᵀ([a, b]) = [b, −a]. */
  ropeAdjoint(x: string): string {
    const { g } = this;
    const [a, b] = this.halves(g.op('Mul', [x, 'sin']));
    const rotated = g.op('Concat', [b, g.op('Neg', [a])], { axis: 3 });
    return g.op('Add', [g.op('Mul', [x, 'cos']), rotated]);
  }
  /**
   * From `qkv` `[B, T, (H + 2·Hkv)·d]`: roped and scaled queries `[B, Hkv, g·T, d]` (the g query
   * heads of a key/value head stacked along rows), roped keys and values `[B, Hkv, T, d]`.
   */
  heads(): { q: string; k: string; v: string } {
    const { g, s, group } = this;
    const { heads, kvHeads, headDim: d } = s;
    const [q, k, v] = g.add(
      'Split',
      ['qkv', g.int64([heads * d, kvHeads * d, kvHeads * d])],
      { axis: 2 },
      3,
    );
    const qr = g.op('Mul', [
      this.rope(this.reshape(q!, [0, 0, heads, d])),
      g.float([1 / Math.sqrt(d)]),
    ]);
    const qh = this.transpose(this.reshape(qr, [0, 0, kvHeads, group, d]), [0, 2, 3, 1, 4]);
    const kvLayout = (x: string) => this.transpose(x, [0, 2, 1, 3]);
    return {
      q: this.reshape(qh, [0, 0, -1, d]),
      k: kvLayout(this.rope(this.reshape(k!, [0, 0, kvHeads, d]))),
      v: kvLayout(this.reshape(v!, [0, 0, kvHeads, d])),
    };
  }
  /** `[B, Hkv, g·T, d]` back to tokens `[B, T, H·d]`. */
  queryTokens(x: string): string {
    const { headDim: d, heads } = this.s;
    const stacked = this.reshape(x, [0, 0, this.group, -1, d]);
    return this.reshape(this.transpose(stacked, [0, 3, 1, 2, 4]), [0, 0, heads, d]);
  }
  /** `[B, Hkv, T, d]` back to tokens `[B, T, Hkv, d]`. */
  kvTokens(x: string): string {
    return this.transpose(x, [0, 2, 1, 3]);
  }
}

const lastTwo = [0, 1, 3, 2];

function forwardModel(shape: AttentionShape): Uint8Array {
  const { heads, kvHeads, headDim: d } = shape;
  const width = (heads + 2 * kvHeads) * d;
  return encodeGraph(
    'attention_forward',
    [
      ['qkv', ['B', 'T', width]],
      ['cos', ['B', 'T', 1, d]],
      ['sin', ['B', 'T', 1, d]],
      ['bias', ['B', 1, 1, 'TT']],
    ],
    ['attention', 'p'],
    (g) => {
      const n = new AttentionNodes(g, shape);
      const { q, k, v } = n.heads();
      const scores = g.op('MatMul', [q, n.transpose(k, lastTwo)]);
      // The mask `[B, 1, T, T]` is shared by the g query heads of a group: add it as `[…, g, T·T]`.
      const masked = g.op('Add', [n.reshape(scores, [0, 0, n.group, -1]), 'bias']);
      const p = g.op('Softmax', [g.op('Reshape', [masked, g.op('Shape', [scores])])], { axis: -1 });
      const o = g.op('MatMul', [p, v]);
      return [n.reshape(n.queryTokens(o), [0, 0, heads * d]), p];
    },
  );
}

function backwardModel(shape: AttentionShape): Uint8Array {
  const { heads, kvHeads, headDim: d } = shape;
  const width = (heads + 2 * kvHeads) * d;
  return encodeGraph(
    'attention_backward',
    [
      ['dAttention', ['B', 'T', heads * d]],
      ['qkv', ['B', 'T', width]],
      ['cos', ['B', 'T', 1, d]],
      ['sin', ['B', 'T', 1, d]],
      ['p', ['B', kvHeads, 'GT', 'T']],
    ],
    ['dQkv'],
    (g) => {
      const n = new AttentionNodes(g, shape);
      const { q, k, v } = n.heads();
      const dO = n.reshape(
        n.transpose(n.reshape('dAttention', [0, 0, kvHeads, n.group, d]), [0, 2, 3, 1, 4]),
        [0, 0, -1, d],
      );
      const dP = g.op('MatMul', [dO, n.transpose(v, lastTwo)]);
      const dV = g.op('MatMul', [n.transpose('p', lastTwo), dO]);
      const rowDot = g.op('ReduceSum', [g.op('Mul', [dP, 'p']), g.int64([-1])], { keepdims: 1 });
      const dS = g.op('Mul', ['p', g.op('Sub', [dP, rowDot])]);
      const dQ = g.op('Mul', [n.queryTokens(g.op('MatMul', [dS, k])), g.float([1 / Math.sqrt(d)])]);
      const dK = g.op('MatMul', [n.transpose(dS, lastTwo), q]);
      const parts = [
        n.reshape(n.ropeAdjoint(dQ), [0, 0, heads * d]),
        n.reshape(n.ropeAdjoint(n.kvTokens(dK)), [0, 0, kvHeads * d]),
        n.reshape(n.kvTokens(dV), [0, 0, kvHeads * d]),
      ];
      return [g.op('Concat', parts, { axis: 2 })];
    },
  );
}

/**
 * Causal grouped-query attention of a fused projection in one onnxruntime session (multi-threaded):
 * forward `qkv [B·T, (H + 2·Hkv)·d]`, RoPE tables `cos`, `sin` `[B·T, 1, d]`, additive mask
 * `[B, 1, T, T]` → attention `[B·T, H·d]` and the probabilities `[B, Hkv, g·T, T]`; backward
 * (`backward: true`) `dAttention`, `qkv`, `cos`, `sin`, `p` → `dQkv` (the RoPE adjoint applied).
 */
function ortAttention(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const attrs = args.attrs as unknown as Attrs;
  const { batch: b, seq: t, heads, kvHeads, headDim: d } = attrs;
  const shape = { heads, kvHeads, headDim: d };
  const key = `attention|${heads}|${kvHeads}|${d}`;
  const input = args.inputs;
  const width = (heads + 2 * kvHeads) * d;
  const tables = [
    { name: 'qkv', info: input.qkv!, dims: [b, t, width] },
    { name: 'cos', info: input.cos!, dims: [b, t, 1, d] },
    { name: 'sin', info: input.sin!, dims: [b, t, 1, d] },
  ];
  if (!attrs.backward) {
    return runOrtGraph(
      args.backend,
      `${key}|forward`,
      () => forwardModel(shape),
      [...tables, { name: 'bias', info: input.bias!, dims: [b, 1, 1, t * t] }],
      [
        { name: 'attention', shape: [b * t, heads * d] },
        { name: 'p', shape: [b, kvHeads, (heads / kvHeads) * t, t] },
      ],
    );
  }
  return runOrtGraph(
    args.backend,
    `${key}|backward`,
    () => backwardModel(shape),
    [
      ...tables,
      { name: 'dAttention', info: input.dAttention!, dims: [b, t, heads * d] },
      { name: 'p', info: input.p!, dims: input.p!.shape },
    ],
    [{ name: 'dQkv', shape: [b * t, width] }],
  );
}

/** Registers {@link ORT_ATTENTION} for wasm (idempotent). @internal */
export function registerOrtAttention(): void {
  if (tf.getKernel(ORT_ATTENTION, 'wasm') !== undefined) return;
  tf.registerKernel({
    kernelName: ORT_ATTENTION,
    backendName: 'wasm',
    kernelFunc: ortAttention as unknown as tf.KernelFunc,
  });
}

/** True when models created now run attention through {@link ORT_ATTENTION}. @internal */
export function ortAttentionActive(): boolean {
  return ortMatMulActive() && tf.getKernel(ORT_ATTENTION, 'wasm') !== undefined;
}

/** Fused attention forward: `[attention, p]` (see {@link ORT_ATTENTION}). @internal */
export function ortAttentionForward(
  qkv: tf.Tensor2D,
  cos: tf.Tensor,
  sin: tf.Tensor,
  bias: tf.Tensor,
  shape: AttentionShape & { batch: number; seq: number },
): [tf.Tensor2D, tf.Tensor] {
  const attrs = { ...shape, backward: false } as unknown as tf.NamedAttrMap;
  const out = tf.engine().runKernel(ORT_ATTENTION, { qkv, cos, sin, bias }, attrs);
  return out as unknown as [tf.Tensor2D, tf.Tensor];
}

/** Fused attention backward: d loss / d qkv `[B·T, (H + 2·Hkv)·d]`. @internal */
export function ortAttentionBackward(
  dAttention: tf.Tensor2D,
  qkv: tf.Tensor2D,
  cos: tf.Tensor,
  sin: tf.Tensor,
  p: tf.Tensor,
  shape: AttentionShape & { batch: number; seq: number },
): tf.Tensor2D {
  const attrs = { ...shape, backward: true } as unknown as tf.NamedAttrMap;
  const out = tf.engine().runKernel(ORT_ATTENTION, { dAttention, qkv, cos, sin, p }, attrs);
  return (out as unknown as tf.Tensor2D[])[0]!;
}
