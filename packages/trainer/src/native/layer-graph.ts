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

/** The shape of a decoder layer. @internal */
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
};

/** The layer-independent names of a layer's tensors in its graphs, in store order. @internal */
export function layerParamNames(spec: LayerSpec): string[] {
  return [
    'ln1',
    'w_qkv',
    ...(spec.qkvBias ? ['b_qkv'] : []),
    'w_o',
    ...(spec.oBias ? ['b_o'] : []),
    'ln2',
    'w_gu',
    'w_down',
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
  cache: Record<(typeof LAYER_CACHE)[number], string>;
  h1: string;
  h2: string;
  norm1: NormValues;
  norm2: NormValues;
  sig: string;
  silu: string;
  act: string;
};

/** The forward of one layer from `x` (`[N, d]`). */
function layerForward(n: GraphNodes, spec: LayerSpec, p: Projections): Forward {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const norm1 = n.rmsNorm('x', 'ln1', spec.rmsNormEps);
  const qkv = p.forward(norm1.h, p.groups.qkv);
  const [qFlat, kFlat, vFlat] = n.split(qkv, [q, kv, kv], 1);
  const roped = n.rope(n.tokensToRows(qFlat!, [spec.heads, spec.headDim]));
  const qHeads = n.queryHeads(n.reshape(n.mul(roped, n.scale), [-1, q]));
  const kHeads = n.kvHeadsOf(kFlat!, true);
  const vHeads = n.kvHeadsOf(vFlat!, false);
  const probabilities = n.attentionProbabilities(qHeads, kHeads);
  const o = n.queryTokens(n.matMul(probabilities, vHeads)); // [N, q]
  const x2 = n.add('x', p.forward(o, p.groups.o));
  const norm2 = n.rmsNorm(x2, 'ln2', spec.rmsNormEps);
  const [gate, up] = n.split(p.forward(norm2.h, p.groups.gu), [spec.ffn, spec.ffn], 1);
  const mlp = n.swiglu(gate!, up!);
  const out = n.add(x2, p.forward(mlp.act, p.groups.down));
  return {
    out,
    cache: { x2, q: qHeads, k: kHeads, v: vHeads, p: probabilities, o, gate: gate!, up: up! },
    h1: norm1.h,
    h2: norm2.h,
    norm1,
    norm2,
    ...mlp,
  };
}

/** The parts of a forward the backward reads, rebuilt from cache inputs (cheap recomputes only). */
function fromCache(n: GraphNodes, spec: LayerSpec): Forward {
  const norm1 = n.rmsNorm('x', 'ln1', spec.rmsNormEps);
  const norm2 = n.rmsNorm('x2', 'ln2', spec.rmsNormEps);
  const mlp = n.swiglu('gate', 'up');
  const cache = Object.fromEntries(LAYER_CACHE.map((name) => [name, name])) as Forward['cache'];
  return { out: '', cache, h1: norm1.h, h2: norm2.h, norm1, norm2, ...mlp };
}

/**
 * The backward of one layer given `d_out`; records its gradients in `grads` (the norms' only when
 * the base trains). Returns d x.
 */
function layerBackward(
  n: GraphNodes,
  f: Forward,
  p: Projections,
  trainBase: boolean,
  grads: Map<string, string>,
) {
  const { mul, add } = n;
  const c = f.cache;
  // the norms' gradients are recorded only when the base trains (LoRA freezes them)
  const normGrads = trainBase ? grads : new Map<string, string>();
  // MLP: act = silu(gate)·up, silu' = σ(1 + gate(1 − σ))
  const dAct = p.backward(f.act, p.groups.down, 'd_out', grads);
  const one = n.g.float([1]);
  const dGate = mul(mul(mul(dAct, c.up), f.sig), add(one, mul(c.gate, n.sub(one, f.sig))));
  const dUp = mul(dAct, f.silu);
  const dGu = n.op('Concat', [dGate, dUp], { axis: 1 });
  const dh2 = p.backward(f.h2, p.groups.gu, dGu, grads);
  const dx2 = add('d_out', n.rmsBackward(f.norm2, 'ln2', dh2, normGrads));
  // attention
  const dO = n.queryHeads(p.backward(c.o, p.groups.o, dx2, grads)); // [B, Hkv, gT, hd]
  const { dq, dk, dv } = n.attentionBackward(c.p, c.q, c.k, c.v, dO);
  const dQkv = n.op('Concat', [dq, dk, dv], { axis: 1 });
  const dh1 = p.backward(f.h1, p.groups.qkv, dQkv, grads);
  return add(dx2, n.rmsBackward(f.norm1, 'ln1', dh1, normGrads));
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
      for (const name of LAYER_CACHE) outputs.push([name, f.cache[name]]);
    }
  } else {
    inputs.push(valueInfo('d_out', FLOAT, ['N', spec.hidden]));
    if (!mode.recompute) {
      for (const name of LAYER_CACHE) inputs.push(valueInfo(name, FLOAT, cacheDims(spec, name)));
    }
    const f = mode.recompute ? layerForward(n, spec, projections) : fromCache(n, spec);
    const grads = new Map<string, string>();
    const dx = layerBackward(n, f, projections, mode.lora === undefined, grads);
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
function cacheDims(spec: LayerSpec, name: (typeof LAYER_CACHE)[number]): (string | number)[] {
  const hd = spec.headDim;
  switch (name) {
    case 'x2':
      return ['N', spec.hidden];
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
