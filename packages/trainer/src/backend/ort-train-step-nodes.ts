/**
 * The model math of the train-step graphs (`ort-train-step.ts`): node helpers (projections in
 * either weight layout, RMSNorm, RoPE, the attention head layouts) and one decoder layer's forward
 * and hand-written backward (the math of `src/model/llama-backward.ts`). @internal
 */
import { GraphBuilder, type LlamaConfig, llamaBiases, type OnnxAttributeValue } from '@rlvr/model';

/**
 * The model the graph is built for (`head_dim` default hidden / heads; projection biases as
 * `llamaBiases` says for `attention_bias` and `model_type`, default none: pass a parsed config,
 * whose `attention_bias` is true for Qwen2). @internal
 */
export type TrainStepSpec = Pick<
  LlamaConfig,
  | 'hidden_size'
  | 'num_hidden_layers'
  | 'num_attention_heads'
  | 'num_key_value_heads'
  | 'intermediate_size'
  | 'vocab_size'
> &
  Partial<Pick<LlamaConfig, 'head_dim' | 'tie_word_embeddings' | 'attention_bias' | 'model_type'>>;

/** A trained tensor (Hugging Face name and layout). @internal */
export type Param = { name: string; shape: number[] };

/** Shapes and optimizer settings of the graph. @internal */
export type StepSettings = {
  /**
   * Layout of the projection weights (`*_proj`, `lm_head`): `hf` = Hugging Face `[out, in]`,
   * `in-out` = transposed, as the tfjs model holds them. Embeddings are `[vocab, hidden]` in both.
   */
  linearLayout: 'hf' | 'in-out';
  ropeTheta: number;
  rmsNormEps: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  maxGradNorm: number;
};

export type Norm = { h: string; xhat: string; r: string; w: string };

export type LayerCache = {
  prefix: string;
  norm1: Norm;
  norm2: Norm;
  q: string;
  k: string;
  v: string;
  p: string;
  o: string;
  gate: string;
  up: string;
  sig: string;
  silu: string;
  act: string;
};

/** Node helpers over one graph: projections, RMSNorm, RoPE and the attention head layouts. */
export class StepNodes {
  readonly g = new GraphBuilder();
  readonly params: Param[] = [];
  readonly grads = new Map<string, string>();
  readonly d: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly hd: number;
  readonly group: number;
  readonly scale: string;
  /** `[B, T]` of the batch (from the RoPE table input `cos` `[B, T, 1, hd]`). */
  readonly bt: string;
  /** Which projections add a bias vector (Qwen2: q, k, v; Llama with `attention_bias`: and o). */
  readonly biases: { qkv: boolean; o: boolean };

  constructor(
    readonly spec: TrainStepSpec,
    readonly s: StepSettings,
  ) {
    this.d = spec.hidden_size;
    this.heads = spec.num_attention_heads;
    this.kvHeads = spec.num_key_value_heads;
    this.hd = spec.head_dim ?? this.d / this.heads;
    this.group = this.heads / this.kvHeads;
    this.scale = this.g.float([1 / Math.sqrt(this.hd)]);
    const shape = this.g.op('Shape', ['cos']);
    this.bt = this.g.op('Slice', [shape, this.g.int64([0]), this.g.int64([2])]);
    this.biases = llamaBiases({
      attention_bias: spec.attention_bias === true,
      model_type: spec.model_type ?? 'llama',
    });
  }
  /** A parameter; `shape` in Hugging Face layout (projections are reversed for `in-out`). */
  param(name: string, shape: number[]): string {
    const linear = name.endsWith('_proj.weight') || name === 'lm_head.weight';
    const held = linear && this.s.linearLayout === 'in-out' ? [...shape].reverse() : shape;
    this.params.push({ name, shape: held });
    return name;
  }
  /** Whether `w` is held `[in, out]` (a projection under the `in-out` layout). */
  private inOut(w: string): boolean {
    return this.s.linearLayout === 'in-out' && w !== 'model.embed_tokens.weight';
  }
  op(type: string, inputs: string[], attrs?: Record<string, OnnxAttributeValue>): string {
    return this.g.op(type, inputs, attrs);
  }
  mul = (a: string, b: string) => this.op('Mul', [a, b]);
  add = (a: string, b: string) => this.op('Add', [a, b]);
  sub = (a: string, b: string) => this.op('Sub', [a, b]);
  matMul = (a: string, b: string) => this.op('MatMul', [a, b]);
  reshape = (x: string, shape: number[]) => this.op('Reshape', [x, this.g.int64(shape)]);
  /** `[N, …]` → `[B, T, ...rest]`. */
  tokensToRows = (x: string, rest: number[]) =>
    this.op('Reshape', [x, this.op('Concat', [this.bt, this.g.int64(rest)], { axis: 0 })]);
  transpose = (x: string, perm: number[]) => this.op('Transpose', [x], { perm });
  /** The projection `x · W` (W held `[in, out]`) or `x · Wᵀ` (`[out, in]`). */
  linear = (x: string, w: string) =>
    this.inOut(w) ? this.op('MatMul', [x, w]) : this.op('Gemm', [x, w], { transB: 1 });
  /** d W of a projection in the layout W is held in: `Xᵀ·dY` (`[in, out]`) or `dYᵀ·X`. */
  weightGrad = (dy: string, x: string, w: string) =>
    this.inOut(w)
      ? this.op('Gemm', [x, dy], { transA: 1 })
      : this.op('Gemm', [dy, x], { transA: 1 });
  /** d X of a projection: `dY · Wᵀ` (W held `[in, out]`) or `dY · W`. */
  inputGrad = (dy: string, w: string) =>
    this.inOut(w) ? this.op('Gemm', [dy, w], { transB: 1 }) : this.op('MatMul', [dy, w]);
  private halves(x: string): [string, string] {
    const half = this.hd / 2;
    const [a, b] = this.g.add('Split', [x, this.g.int64([half, half])], { axis: 3 }, 2);
    return [a!, b!];
  }
  /** `x·cos + rotate_half(x)·sin` on `[B, T, h, hd]`. */
  rope(x: string): string {
    const [a, b] = this.halves(x);
    const rotated = this.op('Concat', [this.op('Neg', [b]), a], { axis: 3 });
    return this.add(this.mul(x, 'cos'), this.mul(rotated, 'sin'));
  }
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
  rmsNorm(x: string, w: string): Norm {
    const ms = this.op('ReduceMean', [this.mul(x, x)], { axes: [-1], keepdims: 1 });
    const eps = this.g.float([this.s.rmsNormEps]);
    const r = this.op('Reciprocal', [this.op('Sqrt', [this.add(ms, eps)])]);
    const xhat = this.mul(x, r);
    return { h: this.mul(xhat, w), xhat, r, w };
  }
  /** d x of an RMSNorm given d h; records d w. */
  rmsBackward(norm: Norm, dh: string): string {
    const dw = this.op('ReduceSum', [this.mul(dh, norm.xhat), this.g.int64([0])], { keepdims: 0 });
    this.grads.set(norm.w, dw);
    const dxhat = this.mul(dh, norm.w);
    const dot = this.op('ReduceMean', [this.mul(dxhat, norm.xhat)], { axes: [-1], keepdims: 1 });
    return this.mul(norm.r, this.sub(dxhat, this.mul(norm.xhat, dot)));
  }
}

export const LAST_TWO = [0, 1, 3, 2];

/** One decoder layer forward: its output and what its backward needs. */
export function layerForward(
  nodes: StepNodes,
  layer: number,
  x: string,
): { out: string; cache: LayerCache } {
  const { d, heads, kvHeads, hd, spec } = nodes;
  const prefix = `model.layers.${layer}`;
  const w = (suffix: string, shape: number[]) => nodes.param(`${prefix}.${suffix}.weight`, shape);
  const ln1 = w('input_layernorm', [d]);
  const wq = w('self_attn.q_proj', [heads * hd, d]);
  const wk = w('self_attn.k_proj', [kvHeads * hd, d]);
  const wv = w('self_attn.v_proj', [kvHeads * hd, d]);
  const wo = w('self_attn.o_proj', [d, heads * hd]);
  const ln2 = w('post_attention_layernorm', [d]);
  const wg = w('mlp.gate_proj', [spec.intermediate_size, d]);
  const wu = w('mlp.up_proj', [spec.intermediate_size, d]);
  const wd = w('mlp.down_proj', [d, spec.intermediate_size]);
  // x · Wᵀ, plus the projection's bias where the config has one
  const project = (input: string, weight: string, size: number, biased: boolean) => {
    const out = nodes.linear(input, weight);
    return biased ? nodes.add(out, nodes.param(weight.replace(/weight$/, 'bias'), [size])) : out;
  };
  const { qkv, o: oBiased } = nodes.biases;
  const norm1 = nodes.rmsNorm(x, ln1);
  const roped = nodes.rope(nodes.tokensToRows(project(norm1.h, wq, heads * hd, qkv), [heads, hd]));
  const q = nodes.queryHeads(nodes.reshape(nodes.mul(roped, nodes.scale), [-1, heads * hd]));
  const k = nodes.kvHeadsOf(project(norm1.h, wk, kvHeads * hd, qkv), true);
  const v = nodes.kvHeadsOf(project(norm1.h, wv, kvHeads * hd, qkv), false);
  const scores = nodes.matMul(q, nodes.transpose(k, LAST_TWO)); // [B, Hkv, gT, T]
  // the bias `[B, 1, 1, T·T]` is shared by the g query heads of a KV head
  const masked = nodes.add(nodes.reshape(scores, [0, 0, nodes.group, -1]), 'bias');
  const p = nodes.op('Softmax', [nodes.op('Reshape', [masked, nodes.op('Shape', [scores])])], {
    axis: -1,
  });
  const o = nodes.queryTokens(nodes.matMul(p, v)); // [N, H·hd]
  const x2 = nodes.add(x, project(o, wo, d, oBiased));
  const norm2 = nodes.rmsNorm(x2, ln2);
  const gate = nodes.linear(norm2.h, wg);
  const up = nodes.linear(norm2.h, wu);
  const sig = nodes.op('Sigmoid', [gate]);
  const silu = nodes.mul(gate, sig);
  const act = nodes.mul(silu, up);
  const out = nodes.add(x2, nodes.linear(act, wd));
  return { out, cache: { prefix, norm1, norm2, q, k, v, p, o, gate, up, sig, silu, act } };
}

/** One decoder layer backward: d (its input) given d (its output); records its gradients. */
export function layerBackward(nodes: StepNodes, c: LayerCache, dOut: string): string {
  const { grads, heads, kvHeads, hd } = nodes;
  const name = (suffix: string) => `${c.prefix}.${suffix}.weight`;
  const { mul, add, sub, matMul } = nodes;
  // MLP: act = silu(gate) · up, silu' = σ(1 + gate(1 − σ))
  const { inputGrad } = nodes;
  const weightGrad = (suffix: string, dy: string, x: string) =>
    grads.set(name(suffix), nodes.weightGrad(dy, x, name(suffix)));
  weightGrad('mlp.down_proj', dOut, c.act);
  const dAct = inputGrad(dOut, name('mlp.down_proj'));
  const one = nodes.g.float([1]);
  const dGate = mul(mul(mul(dAct, c.up), c.sig), add(one, mul(c.gate, sub(one, c.sig))));
  const dUp = mul(dAct, c.silu);
  weightGrad('mlp.gate_proj', dGate, c.norm2.h);
  weightGrad('mlp.up_proj', dUp, c.norm2.h);
  const dh2 = add(inputGrad(dGate, name('mlp.gate_proj')), inputGrad(dUp, name('mlp.up_proj')));
  const dx2 = add(dOut, nodes.rmsBackward(c.norm2, dh2));
  // attention: softmax backward, then the RoPE adjoint of the query and key gradients
  // a bias's gradient: its projection output's gradient summed over the tokens
  const biasGrad = (suffix: string, dy: string) =>
    grads.set(
      `${c.prefix}.${suffix}.bias`,
      nodes.op('ReduceSum', [dy, nodes.g.int64([0])], { keepdims: 0 }),
    );
  weightGrad('self_attn.o_proj', dx2, c.o);
  if (nodes.biases.o) biasGrad('self_attn.o_proj', dx2);
  const dO = nodes.queryHeads(inputGrad(dx2, name('self_attn.o_proj'))); // [B, Hkv, gT, hd]
  const dP = matMul(dO, nodes.transpose(c.v, LAST_TWO));
  const dV = matMul(nodes.transpose(c.p, LAST_TWO), dO);
  const rowDot = nodes.op('ReduceSum', [mul(dP, c.p), nodes.g.int64([-1])], { keepdims: 1 });
  const dS = mul(c.p, sub(dP, rowDot));
  const dQ = mul(nodes.queryTokens(matMul(dS, c.k)), nodes.scale);
  const dK = matMul(nodes.transpose(dS, LAST_TWO), c.q);
  const dq = nodes.reshape(nodes.ropeAdjoint(nodes.tokensToRows(dQ, [heads, hd])), [
    -1,
    heads * hd,
  ]);
  const dk = nodes.reshape(
    nodes.ropeAdjoint(nodes.tokensToRows(nodes.kvTokens(dK), [kvHeads, hd])),
    [-1, kvHeads * hd],
  );
  const dv = nodes.kvTokens(dV);
  const projections: [string, string][] = [
    ['self_attn.q_proj', dq],
    ['self_attn.k_proj', dk],
    ['self_attn.v_proj', dv],
  ];
  for (const [suffix, dy] of projections) {
    weightGrad(suffix, dy, c.norm1.h);
    if (nodes.biases.qkv) biasGrad(suffix, dy);
  }
  const dh1 = projections
    .map(([suffix, dy]) => inputGrad(dy, name(suffix)))
    .reduce((sum, term) => add(sum, term));
  return add(dx2, nodes.rmsBackward(c.norm1, dh1));
}
