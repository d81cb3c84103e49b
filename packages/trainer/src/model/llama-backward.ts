import * as tf from '@tensorflow/tfjs-core';
import type { PreparedInput } from '../batch/prepared-input.js';
import type {
  AttentionCore,
  ForwardCache,
  FusedWeight,
  LayerCache,
  LlamaModel,
} from './llama-model.js';
import { type NormCache, rmsNormBackward } from './rms-norm.js';

type Grads = Map<string, tf.Tensor>;

/** Shapes and helpers shared by the layers of one backward pass. */
type Context = {
  model: LlamaModel;
  grads: Grads;
  b: number;
  t: number;
  n: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  cache: ForwardCache;
  rotateT: tf.Tensor2D;
  /** xᵀ of an activation shared by several products, when transposes are explicit copies. */
  transposed: Map<tf.Tensor, tf.Tensor2D>;
};

/**
 * Backward pass of {@link LlamaModel.forwardWithCache}: gradients of every parameter (same names
 * and layouts as the parameters) given d loss / d logits `[B·T, vocab]`. Fused projections (q/k/v,
 * gate/up) take one weight-gradient product each, and one input-gradient product where the backend
 * allows it (`MatMulOps.fusedInputGradient`). Call inside `tf.tidy`.
 * @internal
 */
export function llamaBackward(
  model: LlamaModel,
  input: PreparedInput,
  cache: ForwardCache,
  dLogits: tf.Tensor2D,
): Grads {
  const config = model.config;
  const ops = model.ops;
  const n = input.batchSize * input.seqLen;
  const context: Context = {
    model,
    grads: new Map(),
    b: input.batchSize,
    t: input.seqLen,
    n,
    heads: config.num_attention_heads,
    kvHeads: config.num_key_value_heads,
    headDim: config.head_dim,
    cache,
    rotateT: ops.t(cache.rotate),
    transposed: new Map(),
  };
  const { grads } = context;
  let dhf: tf.Tensor2D;
  if (config.tie_word_embeddings) {
    const embedding = model.param('model.embed_tokens.weight') as tf.Tensor2D;
    grads.set('model.embed_tokens.weight', ops.mmTN(dLogits, cache.hf));
    dhf = ops.mm(dLogits, embedding);
  } else {
    grads.set('lm_head.weight', ops.mmTN(cache.hf, dLogits));
    dhf = ops.mmNT(dLogits, model.param('lm_head.weight') as tf.Tensor2D);
  }
  let dx = normBackward(context, cache.normF, dhf, 'model.norm.weight');
  for (let layer = config.num_hidden_layers - 1; layer >= 0; layer--) {
    dx = layerBackward(context, `model.layers.${layer}`, cache.layers[layer]!, dx);
  }
  const dEmbedding = embeddingGradient(dx, input.ids, config.vocab_size, config.hidden_size);
  const tied = grads.get('model.embed_tokens.weight');
  grads.set('model.embed_tokens.weight', tied ? tf.add(tied, dEmbedding) : dEmbedding);
  return grads;
}

/** d loss / d x of one decoder layer given d loss / d (its output); records its gradients. */
function layerBackward(
  context: Context,
  prefix: string,
  c: LayerCache,
  dOut: tf.Tensor2D,
): tf.Tensor2D {
  // MLP.
  const dAct = linearBackward(context, c.act, dOut, `${prefix}.mlp.down_proj`);
  const dSilu = tf.mul(dAct, c.up);
  const dUp = tf.mul(dAct, c.silu) as tf.Tensor2D;
  // silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
  const dGate = tf.mul(
    dSilu,
    tf.mul(c.sigmoid, tf.add(1, tf.mul(c.gate, tf.sub(1, c.sigmoid)))),
  ) as tf.Tensor2D;
  const dh2 = fusedBackward(context, c.h2, [dGate, dUp], c.gateUp);
  let dx = tf.add(
    dOut,
    normBackward(context, c.norm2, dh2, `${prefix}.post_attention_layernorm.weight`),
  ) as tf.Tensor2D;
  // Attention.
  const dAttention = linearBackward(context, c.attention, dx, `${prefix}.self_attn.o_proj`);
  const dh1 =
    c.core.kind === 'fused'
      ? fusedBackward(context, c.h1, fusedAttentionBackward(context, c.core, dAttention), c.qkv)
      : composedAttentionBackward(context, c, c.core, dAttention);
  dx = tf.add(dx, normBackward(context, c.norm1, dh1, `${prefix}.input_layernorm.weight`));
  return dx;
}

/** d loss / d qkv (the fused projection output) through `MatMulOps.attention`. */
function fusedAttentionBackward(
  context: Context,
  core: Extract<AttentionCore, { kind: 'fused' }>,
  dAttention: tf.Tensor2D,
): tf.Tensor2D {
  const { b, t, heads, kvHeads, headDim, cache } = context;
  const shape = { heads, kvHeads, headDim, batch: b, seq: t };
  return context.model.ops.attention!.backward(
    dAttention,
    core.qkv,
    cache.cos,
    cache.sin,
    core.p,
    shape,
  );
}

/** d loss / d h1 of attention composed from tfjs ops; records the q/k/v gradients. */
function composedAttentionBackward(
  context: Context,
  c: LayerCache,
  core: Extract<AttentionCore, { kind: 'ops' }>,
  dAttention: tf.Tensor2D,
): tf.Tensor2D {
  const { b, t, n, heads, kvHeads, headDim } = context;
  const ops = context.model.ops;
  const group = heads / kvHeads;
  const dO = tf.reshape(
    tf.transpose(tf.reshape(dAttention, [b, t, heads, headDim]), [0, 2, 1, 3]),
    [b * kvHeads, group * t, headDim],
  ) as tf.Tensor3D;
  const dP = ops.bmmNT(dO, core.vb);
  const dVb = ops.bmmTN(core.p, dO);
  const dScores = tf.mul(core.p, tf.sub(dP, tf.sum(tf.mul(dP, core.p), -1, true))) as tf.Tensor3D;
  const dQg = ops.bmmNT(dScores, core.kt);
  const dK = ops.bmmTN(dScores, core.qg);
  const scale = 1 / Math.sqrt(headDim);
  const dQ = tf.mul(
    tf.reshape(tf.transpose(tf.reshape(dQg, [b, heads, t, headDim]), [0, 2, 1, 3]), [
      n,
      heads * headDim,
    ]),
    scale,
  ) as tf.Tensor2D;
  const kvBack = (d: tf.Tensor3D) =>
    tf.reshape(tf.transpose(tf.reshape(d, [b, kvHeads, t, headDim]), [0, 2, 1, 3]), [
      n,
      kvHeads * headDim,
    ]) as tf.Tensor2D;
  return fusedBackward(
    context,
    c.h1,
    [ropeBackward(context, dQ, heads), ropeBackward(context, kvBack(dK), kvHeads), kvBack(dVb)],
    c.qkv,
  );
}

function ropeBackward(context: Context, dy: tf.Tensor2D, count: number): tf.Tensor2D {
  const { n, headDim, cache } = context;
  const rope = context.model.ops.rope;
  if (rope) return rope(dy, cache.cos, cache.sin, true);
  const dy3 = tf.reshape(dy, [n, count, headDim]);
  const direct = tf.mul(dy3, cache.cos);
  const viaRotate = context.model.ops.mm(
    tf.reshape(tf.mul(dy3, cache.sin), [n * count, headDim]) as tf.Tensor2D,
    context.rotateT,
  );
  return tf.reshape(tf.add(direct, tf.reshape(viaRotate, [n, count, headDim])), [
    n,
    count * headDim,
  ]);
}

/** xᵀ @ dy, with xᵀ copied once per activation where transposes are explicit copies. */
function weightGradient(context: Context, x: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  const ops = context.model.ops;
  if (!ops.explicitTranspose) return ops.mmTN(x, dy);
  let xT = context.transposed.get(x);
  if (xT === undefined) {
    xT = ops.t(x);
    context.transposed.set(x, xT);
  }
  return ops.mm(xT, dy);
}

/** Backward of `y = x @ W (+ bias)`: records dW (and dBias), returns dx. */
function linearBackward(
  context: Context,
  x: tf.Tensor2D,
  dy: tf.Tensor2D,
  name: string,
): tf.Tensor2D {
  const { model, grads } = context;
  grads.set(`${name}.weight`, weightGradient(context, x, dy));
  const biasName = `${name}.bias`;
  if (model.params.has(biasName)) grads.set(biasName, model.ops.sumRows(dy));
  return model.ops.mmNT(dy, model.param(`${name}.weight`) as tf.Tensor2D);
}

/**
 * Backward of a fused projection `[y₁ | y₂ | …] = x @ [W₁ | W₂ | …] (+ biases)` given the
 * `dys` per projection or already concatenated: one product for all weight gradients (split by
 * columns) and one for dx.
 */
function fusedBackward(
  context: Context,
  x: tf.Tensor2D,
  dys: tf.Tensor2D[] | tf.Tensor2D,
  fused: FusedWeight,
): tf.Tensor2D {
  const { model, grads } = context;
  const ops = model.ops;
  const dy = Array.isArray(dys) ? ops.concatColumns(dys) : dys;
  let parts: tf.Tensor2D[] | undefined = Array.isArray(dys) ? dys : undefined;
  const split = () => {
    parts ??= ops.splitColumns(dy, fused.widths);
    return parts;
  };
  const dWeights = ops.splitColumns(weightGradient(context, x, dy), fused.widths);
  fused.names.forEach((name, index) => {
    grads.set(`${name}.weight`, dWeights[index]!);
    if (model.params.has(`${name}.bias`)) grads.set(`${name}.bias`, ops.sumRows(split()[index]!));
  });
  if (ops.fusedInputGradient) return ops.mmNT(dy, fused.weight);
  const inputGrads = fused.names.map((name, index) =>
    ops.mmNT(split()[index]!, model.param(`${name}.weight`) as tf.Tensor2D),
  );
  return (
    inputGrads.length === 2 ? tf.add(inputGrads[0]!, inputGrads[1]!) : tf.addN(inputGrads)
  ) as tf.Tensor2D;
}

function normBackward(
  context: Context,
  norm: NormCache,
  dh: tf.Tensor2D,
  gainName: string,
): tf.Tensor2D {
  const { model, grads } = context;
  const gain = model.param(gainName);
  grads.set(gainName, model.ops.sumRows(tf.mul(dh, norm.xhat) as tf.Tensor2D));
  return rmsNormBackward(norm, tf.mul(dh, gain) as tf.Tensor2D);
}

/** Scatter-adds the rows of dx into the embedding rows of their tokens. */
function embeddingGradient(
  dx: tf.Tensor2D,
  ids: Int32Array,
  vocab: number,
  hidden: number,
): tf.Tensor2D {
  if (tf.getKernel('UnsortedSegmentSum', tf.getBackend()) !== undefined) {
    return tf.unsortedSegmentSum(dx, tf.tensor1d(ids, 'int32'), vocab);
  }
  const rows = dx.dataSync() as Float32Array;
  const sums = new Float32Array(vocab * hidden);
  for (let token = 0; token < ids.length; token++) {
    const target = ids[token]! * hidden;
    const source = token * hidden;
    for (let column = 0; column < hidden; column++) {
      sums[target + column] = sums[target + column]! + rows[source + column]!;
    }
  }
  return tf.tensor2d(sums, [vocab, hidden]);
}
