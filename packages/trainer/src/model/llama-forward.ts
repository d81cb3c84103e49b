import * as tf from '@tensorflow/tfjs-core';
import { attentionBias, type PreparedInput } from '../batch/prepared-input.js';
import { ropeTables, rotateHalfMatrix } from '../batch/rope.js';
import type {
  AttentionCore,
  ForwardResult,
  FusedWeight,
  LayerCache,
  LlamaModel,
} from './llama-model.js';
import { rmsNormForward } from './rms-norm.js';

/** Shapes and tables shared by the layers of one forward pass. */
type Context = {
  model: LlamaModel;
  b: number;
  t: number;
  n: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  cos: tf.Tensor3D;
  sin: tf.Tensor3D;
  rotate: tf.Tensor2D;
  /** Additive attention mask `[B, 1, T, T]` (causal, padding, packing). */
  bias: tf.Tensor4D;
};

/**
 * Forward pass on a prepared batch: logits `[B·T, vocab]` and, when `keepCache`, the activations
 * for the backward pass. Call inside `tf.tidy`. @internal
 */
export function llamaForward(
  model: LlamaModel,
  input: PreparedInput,
  keepCache: boolean,
): ForwardResult {
  const config = model.config;
  const { batchSize: b, seqLen: t } = input;
  const n = b * t;
  const headDim = config.head_dim;
  const ops = model.ops;
  const rope = ropeTables(input.positions, headDim, config.rope_theta);
  const context: Context = {
    model,
    b,
    t,
    n,
    heads: config.num_attention_heads,
    kvHeads: config.num_key_value_heads,
    headDim,
    cos: tf.tensor3d(rope.cos, [n, 1, headDim]),
    sin: tf.tensor3d(rope.sin, [n, 1, headDim]),
    rotate: tf.tensor2d(rotateHalfMatrix(headDim), [headDim, headDim]),
    bias: tf.tensor4d(attentionBias(input), [b, 1, t, t]),
  };
  let x = ops.gatherRows(model.param('model.embed_tokens.weight') as tf.Tensor2D, input.ids);
  const layers: LayerCache[] = [];
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const out = layerForward(context, `model.layers.${layer}`, x);
    x = out.x;
    if (keepCache) layers.push(out.cache);
  }
  const normF = rmsNormForward(x, config.rms_norm_eps);
  const hf = tf.mul(normF.xhat, model.param('model.norm.weight')) as tf.Tensor2D;
  const logits = config.tie_word_embeddings
    ? ops.mmNT(hf, model.param('model.embed_tokens.weight') as tf.Tensor2D)
    : ops.mm(hf, model.param('lm_head.weight') as tf.Tensor2D);
  const { cos, sin, rotate } = context;
  return { logits, cache: { layers, normF, hf, cos, sin, rotate } };
}

/** One decoder layer: its output and the activations its backward pass needs. */
function layerForward(
  context: Context,
  prefix: string,
  input: tf.Tensor2D,
): { x: tf.Tensor2D; cache: LayerCache } {
  const { model } = context;
  const ops = model.ops;
  const epsilon = model.config.rms_norm_eps;
  const norm1 = rmsNormForward(input, epsilon);
  const h1 = tf.mul(norm1.xhat, model.param(`${prefix}.input_layernorm.weight`)) as tf.Tensor2D;
  const qkv = model.fusedWeight(prefix, [
    'self_attn.q_proj',
    'self_attn.k_proj',
    'self_attn.v_proj',
  ]);
  const { attention, core } = ops.attention
    ? fusedAttention(context, h1, qkv)
    : composedAttention(context, h1, qkv);
  const x = tf.add(input, linear(model, attention, `${prefix}.self_attn.o_proj`)) as tf.Tensor2D;
  const norm2 = rmsNormForward(x, epsilon);
  const h2 = tf.mul(
    norm2.xhat,
    model.param(`${prefix}.post_attention_layernorm.weight`),
  ) as tf.Tensor2D;
  const gateUp = model.fusedWeight(prefix, ['mlp.gate_proj', 'mlp.up_proj']);
  const [gate, up] = fusedLinear(model, h2, gateUp) as [tf.Tensor2D, tf.Tensor2D];
  const sigmoid = tf.sigmoid(gate) as tf.Tensor2D;
  const silu = tf.mul(gate, sigmoid) as tf.Tensor2D;
  const act = tf.mul(silu, up) as tf.Tensor2D;
  const out = tf.add(x, linear(model, act, `${prefix}.mlp.down_proj`)) as tf.Tensor2D;
  const cache = { norm1, h1, qkv, gateUp, core, attention, norm2, h2, gate, up, sigmoid };
  return { x: out, cache: { ...cache, silu, act } };
}

/** Attention in one fused kernel of the backend (`MatMulOps.attention`). */
function fusedAttention(
  context: Context,
  h1: tf.Tensor2D,
  qkv: FusedWeight,
): { attention: tf.Tensor2D; core: AttentionCore } {
  const { model, b, t, heads, kvHeads, headDim } = context;
  const projected = fusedProjection(model, h1, qkv);
  const shape = { heads, kvHeads, headDim, batch: b, seq: t };
  const [attention, p] = model.ops.attention!.forward(
    projected,
    context.cos,
    context.sin,
    context.bias,
    shape,
  );
  return { attention, core: { kind: 'fused', qkv: projected, p } };
}

/** Attention composed from tfjs ops (transposes, batched products, softmax). */
function composedAttention(
  context: Context,
  h1: tf.Tensor2D,
  qkv: FusedWeight,
): { attention: tf.Tensor2D; core: AttentionCore } {
  const { model, b, t, n, heads, kvHeads, headDim } = context;
  const ops = model.ops;
  const group = heads / kvHeads;
  const [qRaw, kRaw, v] = fusedLinear(model, h1, qkv) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
  const q = applyRope(context, qRaw, heads);
  const k = applyRope(context, kRaw, kvHeads);
  const qg = tf.reshape(
    tf.transpose(
      tf.reshape(tf.mul(q, 1 / Math.sqrt(headDim)), [b, t, heads, headDim]),
      [0, 2, 1, 3],
    ),
    [b * kvHeads, group * t, headDim],
  ) as tf.Tensor3D;
  const kt = tf.reshape(tf.transpose(tf.reshape(k, [b, t, kvHeads, headDim]), [0, 2, 3, 1]), [
    b * kvHeads,
    headDim,
    t,
  ]) as tf.Tensor3D;
  const vb = tf.reshape(tf.transpose(tf.reshape(v, [b, t, kvHeads, headDim]), [0, 2, 1, 3]), [
    b * kvHeads,
    t,
    headDim,
  ]) as tf.Tensor3D;
  const scores = tf.add(tf.reshape(ops.bmm(qg, kt), [b, heads, t, t]), context.bias);
  const p = tf.reshape(tf.softmax(scores), [b * kvHeads, group * t, t]) as tf.Tensor3D;
  const o = ops.bmm(p, vb);
  const attention = tf.reshape(tf.transpose(tf.reshape(o, [b, heads, t, headDim]), [0, 2, 1, 3]), [
    n,
    heads * headDim,
  ]) as tf.Tensor2D;
  return { attention, core: { kind: 'ops', qg, kt, vb, p } };
}

function applyRope(context: Context, x: tf.Tensor2D, count: number): tf.Tensor2D {
  const { model, n, headDim, cos, sin } = context;
  const ops = model.ops;
  if (ops.rope) return ops.rope(x, cos, sin, false);
  const rotated = ops.mm(tf.reshape(x, [n * count, headDim]), context.rotate);
  const x3 = tf.reshape(x, [n, count, headDim]);
  const r3 = tf.reshape(rotated, [n, count, headDim]);
  return tf.reshape(tf.add(tf.mul(x3, cos), tf.mul(r3, sin)), [n, count * headDim]);
}

function linear(model: LlamaModel, x: tf.Tensor2D, name: string): tf.Tensor2D {
  const out = model.ops.mm(x, model.param(`${name}.weight`) as tf.Tensor2D);
  const bias = model.params.get(`${name}.bias`);
  return bias === undefined ? out : (tf.add(out, bias) as tf.Tensor2D);
}

/** One product for projections of the same input (q/k/v, gate/up), split by columns. */
function fusedLinear(model: LlamaModel, x: tf.Tensor2D, fused: FusedWeight): tf.Tensor2D[] {
  return model.ops.splitColumns(fusedProjection(model, x, fused), fused.widths);
}

/** `x @ [W₁ | W₂ | …] (+ [b₁ | b₂ | …])`, unsplit. */
function fusedProjection(model: LlamaModel, x: tf.Tensor2D, fused: FusedWeight): tf.Tensor2D {
  const out = model.ops.mm(x, fused.weight);
  const biases = fused.names.map((name) => model.params.get(`${name}.bias`));
  if (!biases.every((bias) => bias !== undefined)) return out;
  return tf.add(out, tf.concat(biases, 0)) as tf.Tensor2D;
}
