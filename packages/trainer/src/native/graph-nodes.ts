/**
 * Node helpers of the native engine's graphs: projections on Hugging Face `[out, in]` weights,
 * RMSNorm and its backward, rotate-half RoPE and its adjoint, the grouped-query attention head
 * layouts, softmax attention and its backward, SwiGLU. The math is that of
 * `src/model/llama-backward.ts` (the tfjs model), checked against it and against the float64
 * reference by the tests. @internal
 */
import { GraphBuilder, type OnnxAttributeValue } from '@rlvr/model';

/** Head layout of the attention (and the score scale: default 1 / √head_dim). @internal */
export type HeadShape = {
  heads: number;
  kvHeads: number;
  headDim: number;
  attentionScale?: number;
};

/** An RMSNorm's saved values: `h = xhat · w`, `xhat = x · r`, `r = 1 / √(mean(x²) + ε)`. */
export type NormValues = { h: string; xhat: string; r: string };

export const LAST_TWO = [0, 1, 3, 2];

/** Nodes of one graph (`cos` `[B, T, 1, hd]` gives the batch layout). @internal */
export class GraphNodes {
  readonly g = new GraphBuilder();
  readonly heads: number;
  readonly kvHeads: number;
  readonly hd: number;
  readonly group: number;
  private btValue: string | undefined;
  private scaleValue: string | undefined;
  private readonly attentionScale: number;

  constructor(shape: HeadShape) {
    this.heads = shape.heads;
    this.kvHeads = shape.kvHeads;
    this.hd = shape.headDim;
    this.group = this.heads / this.kvHeads;
    this.attentionScale = shape.attentionScale ?? 1 / Math.sqrt(this.hd);
  }

  /**
   * The attention score scale (1 / √head_dim, or the family's; a constant added on first use: an
   * unused one makes onnxruntime warn).
   */
  get scale(): string {
    this.scaleValue ??= this.g.float([this.attentionScale]);
    return this.scaleValue;
  }

  /** `[B, T]` of the batch (from the RoPE table input `cos`). */
  get bt(): string {
    if (this.btValue === undefined) {
      const shape = this.g.op('Shape', ['cos']);
      this.btValue = this.g.op('Slice', [shape, this.g.int64([0]), this.g.int64([2])]);
    }
    return this.btValue;
  }

  op(type: string, inputs: string[], attrs?: Record<string, OnnxAttributeValue>): string {
    return this.g.op(type, inputs, attrs);
  }
  mul = (a: string, b: string) => this.op('Mul', [a, b]);
  add = (a: string, b: string) => this.op('Add', [a, b]);
  sub = (a: string, b: string) => this.op('Sub', [a, b]);
  matMul = (a: string, b: string) => this.op('MatMul', [a, b]);
  reshape = (x: string, shape: number[]) => this.op('Reshape', [x, this.g.int64(shape)]);
  transpose = (x: string, perm: number[]) => this.op('Transpose', [x], { perm });
  /** `[N, …]` → `[B, T, ...rest]`. */
  tokensToRows = (x: string, rest: number[]) =>
    this.op('Reshape', [x, this.op('Concat', [this.bt, this.g.int64(rest)], { axis: 0 })]);
  split(x: string, sizes: number[], axis: number): string[] {
    return this.g.add('Split', [x, this.g.int64(sizes)], { axis }, sizes.length);
  }
  /** `x · Wᵀ` for `W` `[out, in]`. */
  linear = (x: string, w: string) => this.op('Gemm', [x, w], { transB: 1 });
  /** d W `[out, in]` of `y = x · Wᵀ`: `dYᵀ · X`. */
  weightGrad = (dy: string, x: string) => this.op('Gemm', [dy, x], { transA: 1 });
  /** d X of `y = x · Wᵀ`: `dY · W`. */
  inputGrad = (dy: string, w: string) => this.op('MatMul', [dy, w]);
  /** Σ over tokens (axis 0) of `[N, c]`: a bias gradient. */
  columnSum = (x: string) => this.op('ReduceSum', [x, this.g.int64([0])], { keepdims: 0 });

  private halves(x: string): [string, string] {
    const half = this.hd / 2;
    const [a, b] = this.split(x, [half, half], 3);
    return [a!, b!];
  }
  /** `x·cos + rotate_half(x)·sin` on `[B, T, h, hd]`. */
  rope(x: string): string {
    const [a, b] = this.halves(x);
    const rotated = this.op('Concat', [this.op('Neg', [b]), a], { axis: 3 });
    return this.add(this.mul(x, 'cos'), this.mul(rotated, 'sin'));
  }
  /** The adjoint of {@link GraphNodes.rope}. */
  ropeAdjoint(x: string): string {
    const [a, b] = this.halves(this.mul(x, 'sin'));
    return this.add(this.mul(x, 'cos'), this.op('Concat', [b, this.op('Neg', [a])], { axis: 3 }));
  }
  /** `[N, H·hd]` queries → `[B, Hkv, g·T, hd]` (the g query heads of a KV head stacked). */
  queryHeads(q: string): string {
    const stacked = this.tokensToRows(q, [this.kvHeads, this.group, this.hd]);
    return this.reshape(this.transpose(stacked, [0, 2, 3, 1, 4]), [0, 0, -1, this.hd]);
  }
  /** `[B, Hkv, g·T, hd]` → `[N, H·hd]`. */
  queryTokens(x: string): string {
    const split = this.reshape(x, [0, 0, this.group, -1, this.hd]);
    return this.reshape(this.transpose(split, [0, 3, 1, 2, 4]), [-1, this.heads * this.hd]);
  }
  /** `[N, Hkv·hd]` → `[B, Hkv, T, hd]`, with RoPE when `roped`. */
  kvHeadsOf(x: string, roped: boolean): string {
    const tokens = this.tokensToRows(x, [this.kvHeads, this.hd]);
    return this.transpose(roped ? this.rope(tokens) : tokens, [0, 2, 1, 3]);
  }
  /** `[B, Hkv, T, hd]` → `[N, Hkv·hd]`. */
  kvTokens(x: string): string {
    return this.reshape(this.transpose(x, [0, 2, 1, 3]), [-1, this.kvHeads * this.hd]);
  }
  /** The norm's effective weight: `w`, or `1 + w` with offset 1 (Gemma 3). */
  private normWeight(w: string, offset: 0 | 1): string {
    return offset === 0 ? w : this.add(w, this.g.float([1]));
  }
  /** RMSNorm over the last axis: `x / √(mean(x²) + ε) · (offset + w)`. */
  rmsNorm(x: string, w: string, eps: number, offset: 0 | 1 = 0): NormValues {
    const ms = this.op('ReduceMean', [this.mul(x, x)], { axes: [-1], keepdims: 1 });
    const r = this.op('Reciprocal', [this.op('Sqrt', [this.add(ms, this.g.float([eps]))])]);
    const xhat = this.mul(x, r);
    return { h: this.mul(xhat, this.normWeight(w, offset)), xhat, r };
  }
  /**
   * d x of an RMSNorm given d h; records `w`'s gradient in `grads` (summed over every axis but
   * the last: `sumAxes`, default the token axis of `[N, d]`).
   */
  rmsBackward(
    norm: NormValues,
    w: string,
    dh: string,
    grads: Map<string, string>,
    offset: 0 | 1 = 0,
    sumAxes: number[] = [0],
  ): string {
    const product = this.mul(dh, norm.xhat);
    grads.set(
      w,
      sumAxes.length === 1 && sumAxes[0] === 0
        ? this.columnSum(product)
        : this.op('ReduceSum', [product, this.g.int64(sumAxes)], { keepdims: 0 }),
    );
    const dxhat = this.mul(dh, this.normWeight(w, offset));
    const dot = this.op('ReduceMean', [this.mul(dxhat, norm.xhat)], { axes: [-1], keepdims: 1 });
    return this.mul(norm.r, this.sub(dxhat, this.mul(norm.xhat, dot)));
  }
  /**
   * The gated MLP's activation of `gate` and its derivative's factor: SiLU (σ(g)·g,
   * d/dg = σ(1 + g(1 − σ))) or tanh GELU (PyTorch's `gelu(approximate='tanh')`).
   */
  activation(
    gate: string,
    kind: 'silu' | 'gelu_tanh',
  ): { value: string; derivative: () => string } {
    const { mul, add, sub } = this;
    if (kind === 'silu') {
      const sig = this.op('Sigmoid', [gate]);
      return {
        value: mul(gate, sig),
        derivative: () => {
          const one = this.g.float([1]);
          return mul(sig, add(one, mul(gate, sub(one, sig))));
        },
      };
    }
    const one = this.g.float([1]);
    // u = √(2/π)(g + 0.044715 g³), gelu = g/2 · (1 + tanh u)
    const c = this.g.float([Math.sqrt(2 / Math.PI)]);
    const a = this.g.float([0.044715]);
    const half = this.g.float([0.5]);
    const g2 = mul(gate, gate);
    const u = mul(c, mul(gate, add(one, mul(a, g2))));
    const t = this.op('Tanh', [u]);
    return {
      value: mul(mul(half, gate), add(one, t)),
      // d/dg = ½(1 + t) + ½ g (1 − t²) √(2/π) (1 + 3·0.044715 g²)
      derivative: () =>
        add(
          mul(half, add(one, t)),
          mul(
            mul(mul(half, gate), sub(one, mul(t, t))),
            mul(c, add(one, mul(this.g.float([3 * 0.044715]), g2))),
          ),
        ),
    };
  }

  /**
   * softmax(q·kᵀ + bias) of the grouped layout (`q` `[B, Hkv, gT, hd]`, pre-scaled; `k`
   * `[B, Hkv, T, hd]`); the input `bias` `[B, 1, 1, T·T]` is shared by the g query heads of a KV
   * head.
   */
  attentionProbabilities(q: string, k: string): string {
    const scores = this.matMul(q, this.transpose(k, LAST_TWO)); // [B, Hkv, gT, T]
    const masked = this.add(this.reshape(scores, [0, 0, this.group, -1]), 'bias');
    return this.op('Softmax', [this.op('Reshape', [masked, this.op('Shape', [scores])])], {
      axis: -1,
    });
  }
  /** d q `[N, H·hd]`, d k, d v `[N, Hkv·hd]` (RoPE adjoint applied) from d o `[B, Hkv, gT, hd]`. */
  attentionBackward(
    p: string,
    q: string,
    k: string,
    v: string,
    dO: string,
  ): { dq: string; dk: string; dv: string } {
    const { mul, sub, matMul, heads, kvHeads, hd } = this;
    const dP = matMul(dO, this.transpose(v, LAST_TWO));
    const dV = matMul(this.transpose(p, LAST_TWO), dO);
    const rowDot = this.op('ReduceSum', [mul(dP, p), this.g.int64([-1])], { keepdims: 1 });
    const dS = mul(p, sub(dP, rowDot));
    const dQ = mul(this.queryTokens(matMul(dS, k)), this.scale);
    const dK = matMul(this.transpose(dS, LAST_TWO), q);
    const dq = this.reshape(this.ropeAdjoint(this.tokensToRows(dQ, [heads, hd])), [-1, heads * hd]);
    const dk = this.reshape(this.ropeAdjoint(this.tokensToRows(this.kvTokens(dK), [kvHeads, hd])), [
      -1,
      kvHeads * hd,
    ]);
    return { dq, dk, dv: this.kvTokens(dV) };
  }
}
