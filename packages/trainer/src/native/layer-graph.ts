/**
 * One decoder layer of the native engine as ONNX graphs (opset 17) of symbolic batch and length:
 * the forward, and the hand-written backward with or without recomputing the forward from the
 * layer's input (activation checkpointing). Every layer of a model shares the sessions of its
 * shape: the weights are graph inputs under layer-independent names (`layerParamNames`), fed from
 * the parameter store's buffers (no copy). Projections are fused as the store lays them out:
 * `w_qkv` `[q + 2·kv, d]` (q, k, v rows) and `w_gu` `[2·ffn, d]` (gate, up rows), Hugging Face's
 * `[out, in]` layout, one GEMM each.
 *
 * LoRA (PEFT's): a targeted projection `m` computes `x·Wᵀ + s·(x̃·Aᵀ)·Bᵀ` with `A` `[r, in]`
 * (`lora_<m>_a`), `B` `[out, r]` (`lora_<m>_b`), `s` = α / r (α / √r with rsLoRA) and `x̃` the
 * input times the dropout mask `mask_<m>` (0 or 1 / (1 − p)); the base weights are then frozen:
 * the backward returns the adapters' gradients (and d x), no base gradient.
 * @internal
 */
import { OnnxDataType, valueInfo } from '@rlvr/model';
import { GraphNodes, type NormValues } from './graph-nodes.js';

/** The projections LoRA can target (PEFT's module names without `_proj`). @internal */
export const LORA_MODULES = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
/** A projection LoRA can target. @internal */
export type LoraModule = (typeof LORA_MODULES)[number];

/** The adapters of a layer graph. @internal */
export type LayerLora = {
  /** Targeted projections, in {@link LORA_MODULES} order. */
  modules: LoraModule[];
  r: number;
  /** α / r (or α / √r). */
  scale: number;
  /** Dropout on the adapters' inputs (masks are inputs). */
  dropout: boolean;
};

/**
 * The shape and rules of a decoder layer (from @rlvr/model's `modelArchitecture`: one description
 * for every implementation). Per-layer differences of a family (RoPE tables, NoPE layers, sliding
 * windows) are inputs (`cos`, `sin`, `bias`), so one graph serves every layer. @internal
 */
export type LayerSpec = {
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  rmsNormEps: number;
  /** Biases of the fused q/k/v projection (Qwen2; Llama with `attention_bias`). */
  qkvBias: boolean;
  /** Bias of o_proj (Llama with `attention_bias`). */
  oBias: boolean;
  /** RMSNorm weight offset: 0 → `x̂·w`, 1 → `x̂·(1 + w)` (Gemma 3), every norm. */
  normOffset: 0 | 1;
  /** The gated MLP's activation: SwiGLU (`silu`) or GeGLU with tanh GELU (`gelu_tanh`). */
  activation: 'silu' | 'gelu_tanh';
  /** Factor on the attention scores (1 / √head_dim, or Gemma 3's `query_pre_attn_scalar^−½`). */
  attentionScale: number;
  /** Per-head q/k RMSNorm before RoPE (Qwen3, Gemma 3): weights `q_norm`, `k_norm` `[head_dim]`. */
  qkNorm: boolean;
  /** A norm of the attention output before the residual add (Gemma 3): `attn_out_norm`. */
  attentionOutputNorm: boolean;
  /** A norm of the MLP output before the residual add (Gemma 3): `mlp_out_norm`. */
  mlpOutputNorm: boolean;
};

/** The layer-independent names of a layer's tensors in its graphs, in store order. @internal */
export function layerParamNames(spec: LayerSpec): string[] {
  return [
    'ln1',
    'w_qkv',
    ...(spec.qkvBias ? ['b_qkv'] : []),
    ...(spec.qkNorm ? ['q_norm', 'k_norm'] : []),
    'w_o',
    ...(spec.oBias ? ['b_o'] : []),
    ...(spec.attentionOutputNorm ? ['attn_out_norm'] : []),
    'ln2',
    'w_gu',
    'w_down',
    ...(spec.mlpOutputNorm ? ['mlp_out_norm'] : []),
  ];
}

/** The shape of each layer tensor. @internal */
export function layerParamShapes(spec: LayerSpec): Map<string, number[]> {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const d = spec.hidden;
  const shapes = new Map<string, number[]>([
    ['ln1', [d]],
    ['w_qkv', [q + 2 * kv, d]],
    ['b_qkv', [q + 2 * kv]],
    ['w_o', [d, q]],
    ['b_o', [d]],
    ['ln2', [d]],
    ['w_gu', [2 * spec.ffn, d]],
    ['w_down', [d, spec.ffn]],
    ['q_norm', [spec.headDim]],
    ['k_norm', [spec.headDim]],
    ['attn_out_norm', [d]],
    ['mlp_out_norm', [d]],
  ]);
  return new Map(layerParamNames(spec).map((name) => [name, shapes.get(name)!]));
}

/** `[out, in]` of a LoRA-targetable projection. @internal */
export function moduleShape(spec: LayerSpec, module: LoraModule): [number, number] {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const d = spec.hidden;
  switch (module) {
    case 'q':
      return [q, d];
    case 'k':
    case 'v':
      return [kv, d];
    case 'o':
      return [d, q];
    case 'gate':
    case 'up':
      return [spec.ffn, d];
    case 'down':
      return [d, spec.ffn];
  }
}

/** The adapter tensors of a layer graph and their shapes (A then B per module). @internal */
export function loraParamShapes(spec: LayerSpec, lora: LayerLora): Map<string, number[]> {
  const shapes = new Map<string, number[]>();
  for (const module of lora.modules) {
    const [out, input] = moduleShape(spec, module);
    shapes.set(`lora_${module}_a`, [lora.r, input]);
    shapes.set(`lora_${module}_b`, [out, lora.r]);
  }
  return shapes;
}

/** What a layer's backward needs of its forward when it is not recomputed. @internal */
export const LAYER_CACHE = ['x2', 'q', 'k', 'v', 'p', 'o', 'gate', 'up'] as const;

/** A cache tensor's name. @internal */
export type CacheName = (typeof LAYER_CACHE)[number] | 'q_raw' | 'k_raw' | 'a_raw' | 'm_raw';

/**
 * The cache tensors of a layer of `spec`: {@link LAYER_CACHE}, and the inputs of the family's
 * extra norms (the q/k projections before their norm, the attention and MLP outputs before
 * theirs). @internal
 */
export function layerCache(spec: LayerSpec): CacheName[] {
  return [
    ...LAYER_CACHE,
    ...(spec.qkNorm ? (['q_raw', 'k_raw'] as const) : []),
    ...(spec.attentionOutputNorm ? (['a_raw'] as const) : []),
    ...(spec.mlpOutputNorm ? (['m_raw'] as const) : []),
  ];
}

/**
 * What a layer graph computes:
 * - `forward`: `out` from `x`;
 * - `forward-cache`: `out` and the cache tensors (`LAYER_CACHE`);
 * - `backward`: `dx` and the gradients (`g_<param>` of the layer tensors, or with LoRA of the
 *   adapters only) from `x` and `d_out`, recomputing the forward (`recompute: true`) or from the
 *   cache inputs; with `accumulate`, every gradient is added to its `acc_<param>` input.
 * `lora` adds the adapters to every mode.
 * @internal
 */
export type LayerGraphMode = (
  | { kind: 'forward' }
  | { kind: 'forward-cache' }
  | { kind: 'backward'; recompute: boolean; accumulate: boolean }
) & { lora?: LayerLora };

/** A projection group: one GEMM on the fused weight, its members' output widths. */
type Group = { weight: string; bias?: string; members: { module: LoraModule; width: number }[] };

function groups(spec: LayerSpec): Record<'qkv' | 'o' | 'gu' | 'down', Group> {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  return {
    qkv: {
      weight: 'w_qkv',
      ...(spec.qkvBias ? { bias: 'b_qkv' } : {}),
      members: [
        { module: 'q', width: q },
        { module: 'k', width: kv },
        { module: 'v', width: kv },
      ],
    },
    o: {
      weight: 'w_o',
      ...(spec.oBias ? { bias: 'b_o' } : {}),
      members: [{ module: 'o', width: spec.hidden }],
    },
    gu: {
      weight: 'w_gu',
      members: [
        { module: 'gate', width: spec.ffn },
        { module: 'up', width: spec.ffn },
      ],
    },
    down: { weight: 'w_down', members: [{ module: 'down', width: spec.hidden }] },
  };
}

/** The projections of one graph, with their adapters. */
class Projections {
  readonly groups: ReturnType<typeof groups>;
  private readonly targeted: Set<LoraModule>;

  constructor(
    private readonly n: GraphNodes,
    spec: LayerSpec,
    private readonly lora: LayerLora | undefined,
  ) {
    this.groups = groups(spec);
    this.targeted = new Set(lora?.modules ?? []);
  }

  /** The adapter input `x̃` of module `m` (dropout applied). */
  private adapterInput(x: string, module: LoraModule): string {
    return this.lora?.dropout ? this.n.mul(x, `mask_${module}`) : x;
  }

  /** `x·Aᵀ` `[N, r]` of module `m`. */
  private down(x: string, module: LoraModule): string {
    return this.n.linear(this.adapterInput(x, module), `lora_${module}_a`);
  }

  /** The group's output `[N, Σ widths]`: base GEMM (+ bias) plus the targeted members' deltas. */
  forward(x: string, group: Group): string {
    const { n } = this;
    let out = n.linear(x, group.weight);
    if (group.bias) out = n.add(out, group.bias);
    if (!group.members.some((m) => this.targeted.has(m.module))) return out;
    const scale = n.g.float([this.lora!.scale]);
    const delta = (module: LoraModule) =>
      n.mul(n.linear(this.down(x, module), `lora_${module}_b`), scale);
    if (group.members.length === 1) return n.add(out, delta(group.members[0]!.module));
    const parts = n.split(
      out,
      group.members.map((m) => m.width),
      1,
    );
    const summed = group.members.map((m, i) =>
      this.targeted.has(m.module) ? n.add(parts[i]!, delta(m.module)) : parts[i]!,
    );
    return n.op('Concat', summed, { axis: 1 });
  }

  /**
   * d x of the group given d out `[N, Σ widths]`; records the base gradients (without LoRA) or
   * the adapters' (with LoRA) in `grads`.
   */
  backward(x: string, group: Group, dOut: string, grads: Map<string, string>): string {
    const { n } = this;
    let dx = n.inputGrad(dOut, group.weight);
    if (this.lora === undefined) {
      grads.set(group.weight, n.weightGrad(dOut, x));
      if (group.bias) grads.set(group.bias, n.columnSum(dOut));
      return dx;
    }
    if (!group.members.some((m) => this.targeted.has(m.module))) return dx;
    const scale = n.g.float([this.lora.scale]);
    const parts =
      group.members.length === 1
        ? [dOut]
        : n.split(
            dOut,
            group.members.map((m) => m.width),
            1,
          );
    group.members.forEach((member, i) => {
      const { module } = member;
      if (!this.targeted.has(module)) return;
      const dy = parts[i]!;
      const input = this.adapterInput(x, module);
      const t = n.linear(input, `lora_${module}_a`); // [N, r]
      const u = n.mul(n.matMul(dy, `lora_${module}_b`), scale); // s·dY·B [N, r]
      grads.set(`lora_${module}_b`, n.mul(n.weightGrad(dy, t), scale));
      grads.set(`lora_${module}_a`, n.weightGrad(u, input));
      let back = n.matMul(u, `lora_${module}_a`); // [N, in]
      if (this.lora!.dropout) back = n.mul(back, `mask_${module}`);
      dx = n.add(dx, back);
    });
    return dx;
  }
}

type Forward = {
  out: string;
  cache: Record<string, string>;
  h1: string;
  h2: string;
  norm1: NormValues;
  norm2: NormValues;
  /** The q/k norms' values (`qkNorm`) on `[B, T, heads, head_dim]` rows. */
  qNorm?: NormValues;
  kNorm?: NormValues;
  /** The output norms' values (Gemma 3). */
  attentionOutputNorm?: NormValues;
  mlpOutputNorm?: NormValues;
  /** The activation of the gate and its derivative's factor, and `act` = value · up. */
  activated: string;
  derivative: () => string;
  act: string;
};

/** The MLP part from the pre-MLP norm: gate/up, the activation, and the down projection. */
function mlpForward(n: GraphNodes, spec: LayerSpec, gate: string, up: string) {
  const activation = n.activation(gate, spec.activation);
  return {
    activated: activation.value,
    derivative: activation.derivative,
    act: n.mul(activation.value, up),
  };
}

/** The forward of one layer from `x` (`[N, d]`). */
function layerForward(n: GraphNodes, spec: LayerSpec, p: Projections): Forward {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const eps = spec.rmsNormEps;
  const offset = spec.normOffset;
  const norm1 = n.rmsNorm('x', 'ln1', eps, offset);
  const qkv = p.forward(norm1.h, p.groups.qkv);
  const [qFlat, kFlat, vFlat] = n.split(qkv, [q, kv, kv], 1);
  const qRows = n.tokensToRows(qFlat!, [spec.heads, spec.headDim]);
  const kRows = n.tokensToRows(kFlat!, [spec.kvHeads, spec.headDim]);
  const qNorm = spec.qkNorm ? n.rmsNorm(qRows, 'q_norm', eps, offset) : undefined;
  const kNorm = spec.qkNorm ? n.rmsNorm(kRows, 'k_norm', eps, offset) : undefined;
  const roped = n.rope(qNorm ? qNorm.h : qRows);
  const qHeads = n.queryHeads(n.reshape(n.mul(roped, n.scale), [-1, q]));
  const kHeads = n.transpose(n.rope(kNorm ? kNorm.h : kRows), [0, 2, 1, 3]);
  const vHeads = n.kvHeadsOf(vFlat!, false);
  const probabilities = n.attentionProbabilities(qHeads, kHeads);
  const o = n.queryTokens(n.matMul(probabilities, vHeads)); // [N, q]
  const aRaw = p.forward(o, p.groups.o);
  const attentionOutputNorm = spec.attentionOutputNorm
    ? n.rmsNorm(aRaw, 'attn_out_norm', eps, offset)
    : undefined;
  const x2 = n.add('x', attentionOutputNorm ? attentionOutputNorm.h : aRaw);
  const norm2 = n.rmsNorm(x2, 'ln2', eps, offset);
  const [gate, up] = n.split(p.forward(norm2.h, p.groups.gu), [spec.ffn, spec.ffn], 1);
  const mlp = mlpForward(n, spec, gate!, up!);
  const mRaw = p.forward(mlp.act, p.groups.down);
  const mlpOutputNorm = spec.mlpOutputNorm
    ? n.rmsNorm(mRaw, 'mlp_out_norm', eps, offset)
    : undefined;
  const out = n.add(x2, mlpOutputNorm ? mlpOutputNorm.h : mRaw);
  const cache: Record<string, string> = {
    x2,
    q: qHeads,
    k: kHeads,
    v: vHeads,
    p: probabilities,
    o,
    gate: gate!,
    up: up!,
    q_raw: qFlat!,
    k_raw: kFlat!,
    a_raw: aRaw,
    m_raw: mRaw,
  };
  return {
    out,
    cache,
    h1: norm1.h,
    h2: norm2.h,
    norm1,
    norm2,
    ...(qNorm ? { qNorm } : {}),
    ...(kNorm ? { kNorm } : {}),
    ...(attentionOutputNorm ? { attentionOutputNorm } : {}),
    ...(mlpOutputNorm ? { mlpOutputNorm } : {}),
    ...mlp,
  };
}

/** The parts of a forward the backward reads, rebuilt from cache inputs (cheap recomputes only). */
function fromCache(n: GraphNodes, spec: LayerSpec): Forward {
  const eps = spec.rmsNormEps;
  const offset = spec.normOffset;
  const norm1 = n.rmsNorm('x', 'ln1', eps, offset);
  const norm2 = n.rmsNorm('x2', 'ln2', eps, offset);
  const mlp = mlpForward(n, spec, 'gate', 'up');
  const cache = Object.fromEntries(layerCache(spec).map((name) => [name, name]));
  const rows = (name: string, heads: number) => n.tokensToRows(name, [heads, spec.headDim]);
  return {
    out: '',
    cache,
    h1: norm1.h,
    h2: norm2.h,
    norm1,
    norm2,
    ...(spec.qkNorm
      ? {
          qNorm: n.rmsNorm(rows('q_raw', spec.heads), 'q_norm', eps, offset),
          kNorm: n.rmsNorm(rows('k_raw', spec.kvHeads), 'k_norm', eps, offset),
        }
      : {}),
    ...(spec.attentionOutputNorm
      ? { attentionOutputNorm: n.rmsNorm('a_raw', 'attn_out_norm', eps, offset) }
      : {}),
    ...(spec.mlpOutputNorm
      ? { mlpOutputNorm: n.rmsNorm('m_raw', 'mlp_out_norm', eps, offset) }
      : {}),
    ...mlp,
  };
}

/**
 * The backward of one layer given `d_out`; records its gradients in `grads` (the norms' only when
 * the base trains). Returns d x.
 */
function layerBackward(
  n: GraphNodes,
  spec: LayerSpec,
  f: Forward,
  p: Projections,
  trainBase: boolean,
  grads: Map<string, string>,
) {
  const { mul, add } = n;
  const c = f.cache;
  const offset = spec.normOffset;
  // the norms' gradients are recorded only when the base trains (LoRA freezes them)
  const normGrads = trainBase ? grads : new Map<string, string>();
  const back = (norm: NormValues | undefined, w: string, dy: string) =>
    norm ? n.rmsBackward(norm, w, dy, normGrads, offset) : dy;
  // MLP: act = activation(gate)·up
  const dMlp = back(f.mlpOutputNorm, 'mlp_out_norm', 'd_out');
  const dAct = p.backward(f.act, p.groups.down, dMlp, grads);
  const dGate = mul(mul(dAct, c.up!), f.derivative());
  const dUp = mul(dAct, f.activated);
  const dGu = n.op('Concat', [dGate, dUp], { axis: 1 });
  const dh2 = p.backward(f.h2, p.groups.gu, dGu, grads);
  const dx2 = add('d_out', n.rmsBackward(f.norm2, 'ln2', dh2, normGrads, offset));
  // attention
  const dAttention = back(f.attentionOutputNorm, 'attn_out_norm', dx2);
  const dO = n.queryHeads(p.backward(c.o!, p.groups.o, dAttention, grads)); // [B, Hkv, gT, hd]
  const attention = n.attentionBackward(c.p!, c.q!, c.k!, c.v!, dO);
  let { dq, dk } = attention;
  if (f.qNorm && f.kNorm) {
    // through the per-head norms: weights summed over batch, time and heads
    const rows = (x: string, heads: number) => n.tokensToRows(x, [heads, spec.headDim]);
    const headBack = (norm: NormValues, w: string, dy: string, heads: number) =>
      n.reshape(n.rmsBackward(norm, w, rows(dy, heads), normGrads, offset, [0, 1, 2]), [
        -1,
        heads * spec.headDim,
      ]);
    dq = headBack(f.qNorm, 'q_norm', dq, spec.heads);
    dk = headBack(f.kNorm, 'k_norm', dk, spec.kvHeads);
  }
  const dQkv = n.op('Concat', [dq, dk, attention.dv], { axis: 1 });
  const dh1 = p.backward(f.h1, p.groups.qkv, dQkv, grads);
  return add(dx2, n.rmsBackward(f.norm1, 'ln1', dh1, normGrads, offset));
}

/** An encoded layer graph and its input and output names. @internal */
export type LayerGraph = { model: Uint8Array; inputs: string[]; outputs: string[] };

/** The names of a backward's gradient outputs (without `g_`), in order. @internal */
export function gradientNames(spec: LayerSpec, lora: LayerLora | undefined): string[] {
  return lora ? [...loraParamShapes(spec, lora).keys()] : layerParamNames(spec);
}

/**
 * The graph of `mode` for a layer of `spec`. Inputs: `x` `[N, d]`, `cos`, `sin`
 * `[B, T, 1, head_dim]`, `bias` `[B, 1, 1, T·T]`, the layer tensors (`layerParamNames`), with LoRA
 * the adapters (`loraParamShapes`) and, with dropout, `mask_<m>` `[N, in]`; backward also `d_out`
 * `[N, d]`, the cache tensors (unless recomputing) and with `accumulate` the `acc_<param>` inputs.
 * Outputs: `out` (forward), then the cache tensors (`forward-cache`); or `dx` and `g_<param>` in
 * `gradientNames` order (backward).
 * @internal
 */
export function layerGraph(spec: LayerSpec, mode: LayerGraphMode): LayerGraph {
  const n = new GraphNodes(spec);
  const cacheNames = layerCache(spec);
  const { FLOAT } = OnnxDataType;
  const shapes = layerParamShapes(spec);
  const loraShapes = mode.lora ? loraParamShapes(spec, mode.lora) : new Map<string, number[]>();
  const hd = spec.headDim;
  const inputs = [
    valueInfo('x', FLOAT, ['N', spec.hidden]),
    valueInfo('cos', FLOAT, ['B', 'T', 1, hd]),
    valueInfo('sin', FLOAT, ['B', 'T', 1, hd]),
    valueInfo('bias', FLOAT, ['B', 1, 1, 'TT']),
    ...[...shapes].map(([name, shape]) => valueInfo(name, FLOAT, shape)),
    ...[...loraShapes].map(([name, shape]) => valueInfo(name, FLOAT, shape)),
  ];
  if (mode.lora?.dropout) {
    for (const module of mode.lora.modules) {
      inputs.push(valueInfo(`mask_${module}`, FLOAT, ['N', moduleShape(spec, module)[1]]));
    }
  }
  const projections = new Projections(n, spec, mode.lora);
  const outputs: [string, string][] = [];
  if (mode.kind !== 'backward') {
    const f = layerForward(n, spec, projections);
    outputs.push(['out', f.out]);
    if (mode.kind === 'forward-cache') {
      for (const name of cacheNames) outputs.push([name, f.cache[name]!]);
    }
  } else {
    inputs.push(valueInfo('d_out', FLOAT, ['N', spec.hidden]));
    if (!mode.recompute) {
      for (const name of cacheNames) inputs.push(valueInfo(name, FLOAT, cacheDims(spec, name)));
    }
    const f = mode.recompute ? layerForward(n, spec, projections) : fromCache(n, spec);
    const grads = new Map<string, string>();
    const dx = layerBackward(n, spec, f, projections, mode.lora === undefined, grads);
    outputs.push(['dx', dx]);
    const allShapes = new Map([...shapes, ...loraShapes]);
    for (const name of gradientNames(spec, mode.lora)) {
      let grad = grads.get(name)!;
      if (mode.accumulate) {
        inputs.push(valueInfo(`acc_${name}`, FLOAT, allShapes.get(name)!));
        grad = n.add(`acc_${name}`, grad);
      }
      outputs.push([`g_${name}`, grad]);
    }
  }
  for (const [name, value] of outputs) n.g.add('Identity', [value], {}, [name]);
  const model = n.g.encode({
    irVersion: 8,
    opset: 17,
    producerName: `@rlvr/trainer layer graph (${mode.kind})`,
    graph: {
      name: `layer_${mode.kind}`,
      input: inputs,
      output: outputs.map(([name]) => valueInfo(name, FLOAT)),
    },
  });
  return { model, inputs: inputs.map((input) => input.name!), outputs: outputs.map(([o]) => o) };
}

/** The symbolic dims of a cache tensor. */
function cacheDims(spec: LayerSpec, name: CacheName): (string | number)[] {
  const hd = spec.headDim;
  switch (name) {
    case 'x2':
    case 'a_raw':
    case 'm_raw':
      return ['N', spec.hidden];
    case 'q_raw':
      return ['N', spec.heads * hd];
    case 'k_raw':
      return ['N', spec.kvHeads * hd];
    case 'q':
      return ['B', spec.kvHeads, 'GT', hd];
    case 'k':
    case 'v':
      return ['B', spec.kvHeads, 'T', hd];
    case 'p':
      return ['B', spec.kvHeads, 'GT', 'T'];
    case 'o':
      return ['N', spec.heads * hd];
    case 'gate':
    case 'up':
      return ['N', spec.ffn];
  }
}
