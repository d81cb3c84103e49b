/**
 * One decoder layer of the native engine as ONNX graphs (opset 17) of symbolic batch and length:
 * the forward, and the hand-written backward with or without recomputing the forward from the
 * layer's input (activation checkpointing). Every layer of a model shares the sessions of its
 * shape: the weights are graph inputs under layer-independent names (`LAYER_PARAMS`), fed from
 * the parameter store's buffers (no copy). Projections are fused as the store lays them out:
 * `w_qkv` `[q + 2·kv, d]` (q, k, v rows) and `w_gu` `[2·ffn, d]` (gate, up rows), Hugging Face's
 * `[out, in]` layout, one GEMM each.
 * @internal
 */
import { OnnxDataType, valueInfo } from '@rlvr/model';
import { GraphNodes, type NormValues } from './graph-nodes.js';

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

/** What a layer's backward needs of its forward when it is not recomputed. @internal */
export const LAYER_CACHE = ['x2', 'q', 'k', 'v', 'p', 'o', 'gate', 'up'] as const;

/**
 * What a layer graph computes:
 * - `forward`: `out` from `x`;
 * - `forward-cache`: `out` and the cache tensors (`LAYER_CACHE`);
 * - `backward`: `dx` and `g_<param>` from `x` and `d_out`, recomputing the forward
 *   (`recompute: true`) or from the cache inputs; with `accumulate`, every gradient is added to
 *   its `acc_<param>` input (micro-batches after the first).
 * @internal
 */
export type LayerGraphMode =
  | { kind: 'forward' }
  | { kind: 'forward-cache' }
  | { kind: 'backward'; recompute: boolean; accumulate: boolean };

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
function layerForward(n: GraphNodes, spec: LayerSpec): Forward {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  const norm1 = n.rmsNorm('x', 'ln1', spec.rmsNormEps);
  let qkv = n.linear(norm1.h, 'w_qkv');
  if (spec.qkvBias) qkv = n.add(qkv, 'b_qkv');
  const [qFlat, kFlat, vFlat] = n.split(qkv, [q, kv, kv], 1);
  const roped = n.rope(n.tokensToRows(qFlat!, [spec.heads, spec.headDim]));
  const qHeads = n.queryHeads(n.reshape(n.mul(roped, n.scale), [-1, q]));
  const kHeads = n.kvHeadsOf(kFlat!, true);
  const vHeads = n.kvHeadsOf(vFlat!, false);
  const p = n.attentionProbabilities(qHeads, kHeads);
  const o = n.queryTokens(n.matMul(p, vHeads)); // [N, q]
  let projected = n.linear(o, 'w_o');
  if (spec.oBias) projected = n.add(projected, 'b_o');
  const x2 = n.add('x', projected);
  const norm2 = n.rmsNorm(x2, 'ln2', spec.rmsNormEps);
  const [gate, up] = n.split(n.linear(norm2.h, 'w_gu'), [spec.ffn, spec.ffn], 1);
  const mlp = n.swiglu(gate!, up!);
  const out = n.add(x2, n.linear(mlp.act, 'w_down'));
  return {
    out,
    cache: { x2, q: qHeads, k: kHeads, v: vHeads, p, o, gate: gate!, up: up! },
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

/** The backward of one layer given `d_out`; records `g_<param>` in `grads`. Returns d x. */
function layerBackward(n: GraphNodes, spec: LayerSpec, f: Forward, grads: Map<string, string>) {
  const { mul, add } = n;
  const c = f.cache;
  // MLP: act = silu(gate)·up, silu' = σ(1 + gate(1 − σ))
  grads.set('w_down', n.weightGrad('d_out', f.act));
  const dAct = n.inputGrad('d_out', 'w_down');
  const one = n.g.float([1]);
  const dGate = mul(mul(mul(dAct, c.up), f.sig), add(one, mul(c.gate, n.sub(one, f.sig))));
  const dUp = mul(dAct, f.silu);
  const dGu = n.op('Concat', [dGate, dUp], { axis: 1 });
  grads.set('w_gu', n.weightGrad(dGu, f.h2));
  const dx2 = add('d_out', n.rmsBackward(f.norm2, 'ln2', n.inputGrad(dGu, 'w_gu'), grads));
  // attention
  grads.set('w_o', n.weightGrad(dx2, c.o));
  if (spec.oBias) grads.set('b_o', n.columnSum(dx2));
  const dO = n.queryHeads(n.inputGrad(dx2, 'w_o')); // [B, Hkv, gT, hd]
  const { dq, dk, dv } = n.attentionBackward(c.p, c.q, c.k, c.v, dO);
  const dQkv = n.op('Concat', [dq, dk, dv], { axis: 1 });
  grads.set('w_qkv', n.weightGrad(dQkv, f.h1));
  if (spec.qkvBias) grads.set('b_qkv', n.columnSum(dQkv));
  return add(dx2, n.rmsBackward(f.norm1, 'ln1', n.inputGrad(dQkv, 'w_qkv'), grads));
}

/** An encoded layer graph and its input and output names. @internal */
export type LayerGraph = { model: Uint8Array; inputs: string[]; outputs: string[] };

/**
 * The graph of `mode` for a layer of `spec`. Inputs: `x` `[N, d]`, `cos`, `sin`
 * `[B, T, 1, head_dim]`, `bias` `[B, 1, 1, T·T]`, the layer tensors (`layerParamNames`); backward
 * also `d_out` `[N, d]`, the cache tensors (unless recomputing) and with `accumulate` the
 * `acc_<param>` inputs. Outputs: `out` (forward), then the cache tensors (`forward-cache`); or
 * `dx` and `g_<param>` (backward).
 * @internal
 */
export function layerGraph(spec: LayerSpec, mode: LayerGraphMode): LayerGraph {
  const n = new GraphNodes(spec);
  const { FLOAT } = OnnxDataType;
  const params = layerParamNames(spec);
  const shapes = layerParamShapes(spec);
  const hd = spec.headDim;
  const inputs = [
    valueInfo('x', FLOAT, ['N', spec.hidden]),
    valueInfo('cos', FLOAT, ['B', 'T', 1, hd]),
    valueInfo('sin', FLOAT, ['B', 'T', 1, hd]),
    valueInfo('bias', FLOAT, ['B', 1, 1, 'TT']),
    ...params.map((name) => valueInfo(name, FLOAT, shapes.get(name)!)),
  ];
  const outputs: [string, string][] = [];
  if (mode.kind !== 'backward') {
    const f = layerForward(n, spec);
    outputs.push(['out', f.out]);
    if (mode.kind === 'forward-cache') {
      for (const name of LAYER_CACHE) outputs.push([name, f.cache[name]]);
    }
  } else {
    inputs.push(valueInfo('d_out', FLOAT, ['N', spec.hidden]));
    if (!mode.recompute) {
      for (const name of LAYER_CACHE) inputs.push(valueInfo(name, FLOAT, cacheDims(spec, name)));
    }
    const f = mode.recompute ? layerForward(n, spec) : fromCache(n, spec);
    const grads = new Map<string, string>();
    const dx = layerBackward(n, spec, f, grads);
    outputs.push(['dx', dx]);
    for (const name of params) {
      let grad = grads.get(name)!;
      if (mode.accumulate) {
        inputs.push(valueInfo(`acc_${name}`, FLOAT, shapes.get(name)!));
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
