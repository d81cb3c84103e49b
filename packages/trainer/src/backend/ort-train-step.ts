/**
 * A prototype train-step graph (issue #14, route 2b; measured by `bench/ort-train-step.bench.ts`,
 * not used by the trainer yet): forward, the weighted cross-entropy of `sftStep` (weights
 * 1 / completion tokens on the completion positions), the hand-written backward (the math of
 * `src/model/llama-backward.ts`), PyTorch's global-norm clipping and AdamW (decoupled weight
 * decay), as one ONNX graph (opset 17) of symbolic batch and length: the RoPE tables and the
 * attention bias (causal, padding, packing) are inputs, computed as the tfjs model computes them.
 * Bias-free Llama layers; tied embeddings and any `head_dim`. @internal
 */
import {
  GraphBuilder,
  type LlamaConfig,
  type OnnxAttributeValue,
  OnnxDataType,
  valueInfo,
} from '@rlvr/model';
import { attentionBias } from '../model/prepared-input.js';
import { ropeTables } from '../model/rope.js';
import { isNoDecayParameter } from '../optim/adamw.js';
import { buildTokenBatch, type TokenBatch, type TokenSequence } from '../train/batch.js';

/** The model the graph is built for (`head_dim` default hidden / heads). @internal */
export type TrainStepSpec = Pick<
  LlamaConfig,
  | 'hidden_size'
  | 'num_hidden_layers'
  | 'num_attention_heads'
  | 'num_key_value_heads'
  | 'intermediate_size'
  | 'vocab_size'
> &
  Partial<Pick<LlamaConfig, 'head_dim' | 'tie_word_embeddings'>>;

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

type Norm = { h: string; xhat: string; r: string; w: string };

type LayerCache = {
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
class StepNodes {
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

const LAST_TWO = [0, 1, 3, 2];

/** One decoder layer forward: its output and what its backward needs. */
function layerForward(
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
  const norm1 = nodes.rmsNorm(x, ln1);
  const roped = nodes.rope(nodes.tokensToRows(nodes.linear(norm1.h, wq), [heads, hd]));
  const q = nodes.queryHeads(nodes.reshape(nodes.mul(roped, nodes.scale), [-1, heads * hd]));
  const k = nodes.kvHeadsOf(nodes.linear(norm1.h, wk), true);
  const v = nodes.kvHeadsOf(nodes.linear(norm1.h, wv), false);
  const scores = nodes.matMul(q, nodes.transpose(k, LAST_TWO)); // [B, Hkv, gT, T]
  // the bias `[B, 1, 1, T·T]` is shared by the g query heads of a KV head
  const masked = nodes.add(nodes.reshape(scores, [0, 0, nodes.group, -1]), 'bias');
  const p = nodes.op('Softmax', [nodes.op('Reshape', [masked, nodes.op('Shape', [scores])])], {
    axis: -1,
  });
  const o = nodes.queryTokens(nodes.matMul(p, v)); // [N, H·hd]
  const x2 = nodes.add(x, nodes.linear(o, wo));
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
function layerBackward(nodes: StepNodes, c: LayerCache, dOut: string): string {
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
  weightGrad('self_attn.o_proj', dx2, c.o);
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
  for (const [suffix, dy] of projections) weightGrad(suffix, dy, c.norm1.h);
  const dh1 = projections
    .map(([suffix, dy]) => inputGrad(dy, name(suffix)))
    .reduce((sum, term) => add(sum, term));
  return add(dx2, nodes.rmsBackward(c.norm1, dh1));
}

/** Clipping and AdamW over every parameter: `[w', m', v']` per parameter, then the grad norm. */
function adamW(nodes: StepNodes): { updated: string[]; gradNorm: string } {
  const { g, s } = nodes;
  const scalar = (value: number) => g.float([value], []);
  const squares = nodes.params.map((p) =>
    nodes.op('ReduceSumSquare', [nodes.grads.get(p.name)!], { keepdims: 0 }),
  );
  const gradNorm = nodes.op('Sqrt', [nodes.op('Sum', squares)]);
  // PyTorch's clip_grad_norm_: max_norm / (norm + 1e-6), at most 1 (maxGradNorm 0: no clipping)
  const clip =
    s.maxGradNorm > 0
      ? nodes.op('Min', [
          scalar(1),
          nodes.op('Div', [scalar(s.maxGradNorm), nodes.add(gradNorm, scalar(1e-6))]),
        ])
      : scalar(1);
  const updated: string[] = [];
  for (const p of nodes.params) {
    const grad = nodes.mul(nodes.grads.get(p.name)!, clip);
    const m = nodes.add(
      nodes.mul(`${p.name}.m`, scalar(s.beta1)),
      nodes.mul(grad, scalar(1 - s.beta1)),
    );
    const v = nodes.add(
      nodes.mul(`${p.name}.v`, scalar(s.beta2)),
      nodes.mul(nodes.mul(grad, grad), scalar(1 - s.beta2)),
    );
    // fed per step: c1 = lr / (1 − β1ᵗ), c2 = 1 / (1 − β2ᵗ), keep = 1 − lr · weight decay
    const denominator = nodes.add(nodes.op('Sqrt', [nodes.mul(v, 'c2')]), scalar(s.epsilon));
    // norms and biases are not decayed (the trainer's `isNoDecayParameter`)
    const decayed = isNoDecayParameter(p.name) ? p.name : nodes.mul(p.name, 'keep');
    updated.push(nodes.sub(decayed, nodes.op('Div', [nodes.mul(m, 'c1'), denominator])), m, v);
  }
  return { updated, gradNorm };
}

/** The loss head: logits, weighted cross-entropy and d loss / d (final norm output). */
function lossHead(
  nodes: StepNodes,
  hf: string,
  head: string,
  labelIds: string,
): { loss: string; dHf: string } {
  const { g } = nodes;
  const logp = nodes.op('LogSoftmax', [nodes.linear(hf, head)], { axis: -1 }); // [N, V]
  const labels = nodes.op('Unsqueeze', [labelIds, g.int64([1])]);
  const weights = nodes.op('Unsqueeze', ['loss_weights', g.int64([1])]); // [N, 1]
  const picked = nodes.op('GatherElements', [logp, labels], { axis: 1 });
  const loss = nodes.op('Neg', [
    nodes.op('ReduceSum', [nodes.mul(picked, weights)], { keepdims: 0 }),
  ]);
  // d loss / d logits = (softmax − onehot(label)) · weight
  const depth = g.int64([nodes.spec.vocab_size], []);
  const oneHot = nodes.op('OneHot', [labelIds, depth, g.float([0, 1], [2])], { axis: -1 });
  const dLogits = nodes.mul(nodes.sub(nodes.op('Exp', [logp]), oneHot), weights);
  nodes.grads.set(head, nodes.weightGrad(dLogits, hf, head));
  return { loss, dHf: nodes.inputGrad(dLogits, head) };
}

/**
 * The train-step graph of one model. Inputs: `ids`, `labels` `[N]` (float32 token ids; N = B·T),
 * `loss_weights` `[N]`, `cos`, `sin` `[B, T, 1, head_dim]`, `bias` `[B, 1, 1, T·T]`, `c1`, `c2`
 * (AdamW's bias-corrected step factors), `keep` (1 − lr · weight decay), every parameter `<name>`
 * and its moments `<name>.m`, `<name>.v`. Outputs: `loss`, `grad_norm` (before clipping) and
 * `<name>.new`, `<name>.m.new`, `<name>.v.new`.
 * @internal
 */
export function trainStepGraph(
  spec: TrainStepSpec,
  settings: StepSettings,
): { model: Uint8Array; params: Param[] } {
  const nodes = new StepNodes(spec, settings);
  const { g, d, hd } = nodes;
  const vocab = spec.vocab_size;
  const embed = nodes.param('model.embed_tokens.weight', [vocab, d]);
  // token ids arrive as float32 (exact below 2^24) so that every input is a float32 tensor
  const ids = nodes.op('Cast', ['ids'], { to: OnnxDataType.INT64 });
  let x = nodes.op('Gather', [embed, ids], { axis: 0 }); // [N, d]
  const caches: LayerCache[] = [];
  for (let layer = 0; layer < spec.num_hidden_layers; layer++) {
    const { out, cache } = layerForward(nodes, layer, x);
    caches.push(cache);
    x = out;
  }
  const normF = nodes.rmsNorm(x, nodes.param('model.norm.weight', [d]));
  const tied = spec.tie_word_embeddings === true;
  const head = tied ? embed : nodes.param('lm_head.weight', [vocab, d]);
  const { loss, dHf } = lossHead(
    nodes,
    normF.h,
    head,
    nodes.op('Cast', ['labels'], { to: OnnxDataType.INT64 }),
  );
  const headGrad = nodes.grads.get(head)!;
  let dx = nodes.rmsBackward(normF, dHf);
  for (let layer = spec.num_hidden_layers - 1; layer >= 0; layer--) {
    dx = layerBackward(nodes, caches[layer]!, dx);
  }
  // ScatterElements (sequential in onnxruntime): ScatterND's add reduction is atomic across
  // threads, so repeated token ids summed in a varying order made runs differ from run to run
  const rows = nodes.op('Expand', [
    nodes.op('Unsqueeze', [ids, g.int64([1])]),
    nodes.op('Shape', [dx]),
  ]);
  const zeros = nodes.op('ConstantOfShape', [g.int64([vocab, d])]);
  const embedGrad = nodes.op('ScatterElements', [zeros, rows, dx], {
    axis: 0,
    reduction: 'add',
  });
  nodes.grads.set(embed, tied ? nodes.add(headGrad, embedGrad) : embedGrad);
  const { updated, gradNorm } = adamW(nodes);
  const suffixes = ['new', 'm.new', 'v.new'];
  const outputs = [
    'loss',
    'grad_norm',
    ...nodes.params.flatMap((p) => suffixes.map((suffix) => `${p.name}.${suffix}`)),
  ];
  [loss, gradNorm, ...updated].forEach((value, index) => {
    g.add('Identity', [value], {}, [outputs[index]!]);
  });
  const { FLOAT } = OnnxDataType;
  const model = g.encode({
    irVersion: 8,
    opset: 17,
    producerName: '@rlvr/trainer train-step prototype',
    graph: {
      name: 'train_step',
      input: [
        valueInfo('ids', FLOAT, ['N']),
        valueInfo('labels', FLOAT, ['N']),
        valueInfo('loss_weights', FLOAT, ['N']),
        valueInfo('cos', FLOAT, ['B', 'T', 1, hd]),
        valueInfo('sin', FLOAT, ['B', 'T', 1, hd]),
        valueInfo('bias', FLOAT, ['B', 1, 1, 'TT']),
        ...['c1', 'c2', 'keep'].map((name) => valueInfo(name, FLOAT, [])),
        ...nodes.params.flatMap((p) =>
          ['', '.m', '.v'].map((suffix) => valueInfo(`${p.name}${suffix}`, FLOAT, p.shape)),
        ),
      ],
      output: outputs.map((output) => valueInfo(output, FLOAT)),
    },
  });
  return { model, params: nodes.params };
}

/** A float32 graph input: its values and dims. @internal */
export type StepInput = { data: Float32Array; dims: number[] };

/**
 * The non-parameter inputs of {@link trainStepGraph} for one batch laid out by `buildTokenBatch`
 * (`sftStep`'s loss: 1 / completion tokens at each completion position) and AdamW step `step`.
 * @internal
 */
export function stepInputs(
  batch: TokenBatch,
  model: { headDim: number; ropeTheta: number },
  optimizer: {
    step: number;
    learningRate: number;
    beta1: number;
    beta2: number;
    weightDecay: number;
  },
): Record<string, StepInput> {
  const { batchSize: b, seqLen: t, positions } = batch.input;
  const n = b * t;
  const tokens = batch.slots.reduce((sum, slots) => sum + slots.length, 0);
  const lossWeights = new Float32Array(n);
  for (const slots of batch.slots) for (const slot of slots) lossWeights[slot] = 1 / tokens;
  const rope = ropeTables(positions, model.headDim, model.ropeTheta);
  const { step, learningRate } = optimizer;
  const scalar = (value: number) => ({ data: Float32Array.of(value), dims: [] });
  return {
    ids: { data: Float32Array.from(batch.input.ids), dims: [n] },
    labels: { data: Float32Array.from(batch.targets), dims: [n] },
    loss_weights: { data: lossWeights, dims: [n] },
    cos: { data: rope.cos, dims: [b, t, 1, model.headDim] },
    sin: { data: rope.sin, dims: [b, t, 1, model.headDim] },
    bias: { data: attentionBias(batch.input), dims: [b, 1, 1, t * t] },
    c1: scalar(learningRate / (1 - optimizer.beta1 ** step)),
    c2: scalar(1 / (1 - optimizer.beta2 ** step)),
    keep: scalar(1 - learningRate * optimizer.weightDecay),
  };
}

/** The parts of onnxruntime-node the runner uses (passed in: the package is an optional peer). */
type Ort = typeof import('onnxruntime-node');

/** Settings of {@link createOrtTrainStep}. @internal */
export type OrtTrainStepSettings = StepSettings & {
  learningRate: number;
  weightDecay: number;
  threads: number;
  /** Context limit (max_position_embeddings) for the batch layout. */
  maxLength: number;
};

/**
 * Runs {@link trainStepGraph} from `tensors` (Hugging Face names): weights and Adam moments live
 * in onnxruntime tensors, and each step's outputs are the next step's inputs. `step` lays the
 * sequences out as `sftStep` does (`buildTokenBatch`, right-padded or packed rows; the loss is
 * the mean over completion tokens) and returns the loss and the gradient norm before clipping.
 * @internal
 */
export async function createOrtTrainStep(
  ort: Ort,
  spec: TrainStepSpec,
  settings: OrtTrainStepSettings,
  tensors: ReadonlyMap<string, Float32Array>,
): Promise<{
  step(
    sequences: readonly TokenSequence[],
    options?: { pack?: boolean; learningRate?: number },
  ): Promise<{ loss: number; gradNorm: number }>;
  weights(): Map<string, Float32Array>;
  release(): Promise<void>;
}> {
  const { model, params } = trainStepGraph(spec, settings);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: settings.threads,
    graphOptimizationLevel: 'all',
  });
  type OrtTensor = InstanceType<Ort['Tensor']>;
  const state: Record<string, OrtTensor> = {};
  for (const p of params) {
    const data = tensors.get(p.name);
    if (data === undefined) throw new Error(`createOrtTrainStep: no tensor '${p.name}'`);
    state[p.name] = new ort.Tensor('float32', Float32Array.from(data), p.shape);
    state[`${p.name}.m`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
    state[`${p.name}.v`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
  }
  const hd = spec.head_dim ?? spec.hidden_size / spec.num_attention_heads;
  const float = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);
  let t = 0;
  return {
    async step(sequences, options = {}) {
      const batch = buildTokenBatch(sequences, {
        maxLength: settings.maxLength,
        vocabSize: spec.vocab_size,
        functionName: 'createOrtTrainStep().step',
        ...(options.pack === undefined ? {} : { pack: options.pack }),
      });
      t += 1;
      const inputs = stepInputs(
        batch,
        { headDim: hd, ropeTheta: settings.ropeTheta },
        { ...settings, step: t, learningRate: options.learningRate ?? settings.learningRate },
      );
      const feeds: Record<string, OrtTensor> = { ...state };
      for (const [name, input] of Object.entries(inputs))
        feeds[name] = float(input.data, input.dims);
      const out = await session.run(feeds);
      for (const p of params) {
        state[p.name] = out[`${p.name}.new`]!;
        state[`${p.name}.m`] = out[`${p.name}.m.new`]!;
        state[`${p.name}.v`] = out[`${p.name}.v.new`]!;
      }
      const value = (name: string) => (out[name]!.data as Float32Array)[0]!;
      return { loss: value('loss'), gradNorm: value('grad_norm') };
    },
    weights: () => new Map(params.map((p) => [p.name, state[p.name]!.data as Float32Array])),
    release: () => session.release(),
  };
}
