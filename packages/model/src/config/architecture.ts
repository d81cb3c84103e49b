import { type ModelConfig, type ModelType, parseModelConfig } from './model-config.js';
import { type RopeScaling, ropeInverseFrequencies } from './rope.js';

/**
 * The RoPE of one layer. `rotary`: Hugging Face's rotate-half layout (pair `i` is dims `i` and
 * `i + head_dim/2` of each head), angle `position · inverseFrequencies[i]` (scaling included) on
 * queries and keys after their projections (and after q/k norm where the family has it). `none`:
 * the layer has no positional encoding (SmolLM3's NoPE layers).
 */
export type LayerRope =
  | { kind: 'none'; id: 'none' }
  | {
      kind: 'rotary';
      /** A key naming these settings: layers with the same `id` share cos/sin tables. */
      id: string;
      theta: number;
      scaling: RopeScaling | null;
      /** `head_dim / 2` inverse frequencies in float64 (`θ^(−2i/d)` with `scaling` applied). */
      inverseFrequencies: readonly number[];
    };

/**
 * One decoder layer: which operations it has, with the Hugging Face tensor name of each weight
 * (projections without the `.weight` / `.bias` suffix). The layer computes, on the residual `x`:
 *
 * ```
 * h = norm(x, attentionNorm)
 * q, k, v = h·q_projᵀ (+b), h·k_projᵀ (+b), h·v_projᵀ (+b)        split into heads
 * q, k = norm(q, qNorm), norm(k, kNorm)                        per head, over head_dim (if not null)
 * q, k = rope(q), rope(k)                                      (if rope.kind is 'rotary')
 * a = softmax(attentionScale · q·kᵀ + mask(window)) · v         grouped-query, keys repeated per group
 * a = a·o_projᵀ (+b);  a = norm(a, attentionOutputNorm)        (if not null)
 * x = x + a
 * h = norm(x, mlpNorm)
 * m = down(act(gate(h)) ⊙ up(h));  m = norm(m, mlpOutputNorm)  (if not null)
 * x = x + m
 * ```
 *
 * `norm(v, w)` is the model's RMSNorm `v / sqrt(mean(v²) + eps) · (normOffset + w)`.
 */
export type LayerArchitecture = {
  index: number;
  /** `'full_attention'` or `'sliding_attention'` (Hugging Face's `layer_types` names). */
  attentionType: 'full_attention' | 'sliding_attention';
  /**
   * `null`: causal over every earlier key. A number `w`: key `j` is visible from query `i` only if
   * `i − j < w` (Hugging Face's and llama.cpp's sliding window; `i`, `j` count cache slots).
   */
  window: number | null;
  rope: LayerRope;
  /** Pre-attention norm (`input_layernorm`). */
  attentionNorm: string;
  /** Per-head q/k RMSNorm weights `[head_dim]` (Qwen3, Gemma 3), or null. */
  qNorm: string | null;
  kNorm: string | null;
  /** Norm of the attention output before the residual add (Gemma 3's `post_attention_layernorm`). */
  attentionOutputNorm: string | null;
  /** Pre-MLP norm (`post_attention_layernorm` in Llama/Qwen/SmolLM, `pre_feedforward_layernorm` in Gemma 3). */
  mlpNorm: string;
  /** Norm of the MLP output before the residual add (Gemma 3's `post_feedforward_layernorm`). */
  mlpOutputNorm: string | null;
  /** Projection names (append `.weight`, and `.bias` where {@link ModelArchitecture.biases} says). */
  q: string;
  k: string;
  v: string;
  o: string;
  gate: string;
  up: string;
  down: string;
};

/**
 * The one description of a model's math, derived from its config, that every implementation
 * consumes (the float64 reference, both ONNX graphs, GGUF export, the trainer). Plain data.
 *
 * Whole model: `x = embed[ids] · embeddingScale`, the {@link layers} in order, then
 * `logits = norm(x, finalNorm) · lmHeadᵀ` (`lmHead` is the embedding matrix when tied; never
 * scaled). Anything a family has that is not described here is refused by {@link parseModelConfig}.
 */
export type ModelArchitecture = {
  modelType: ModelType;
  hiddenSize: number;
  intermediateSize: number;
  vocabSize: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** RMSNorm weight offset: 0 → `x̂ · w` (Llama, Qwen, SmolLM), 1 → `x̂ · (1 + w)` (Gemma 3), every norm. */
  normOffset: 0 | 1;
  /** RMSNorm epsilon (inside the square root), every norm. */
  normEps: number;
  /** Gate activation of the gated MLP: `silu` (SwiGLU) or `gelu_tanh` (GeGLU, tanh-approximated GELU). */
  activation: 'silu' | 'gelu_tanh';
  /** Factor on the embeddings (Gemma 3: `√hidden_size` rounded to float32, as HF and llama.cpp do), else 1. */
  embeddingScale: number;
  /** Factor on the attention scores `q·k`: `1/√head_dim`, or `query_pre_attn_scalar^−1/2` (Gemma 3). */
  attentionScale: number;
  /** Projection biases: q/k/v (`qwen2`, `llama` with `attention_bias`), o (`llama` with `attention_bias`). */
  biases: { qkv: boolean; o: boolean };
  /** Tanh soft-capping of the final logits: always null (a config with one is refused). */
  finalLogitSoftcapping: null;
  embedding: string;
  finalNorm: string;
  /** `lm_head.weight`, or `model.embed_tokens.weight` when the embeddings are tied. */
  lmHead: string;
  tiedEmbeddings: boolean;
  layers: LayerArchitecture[];
};

function rotary(theta: number, scaling: RopeScaling | null, headDim: number): LayerRope {
  return {
    kind: 'rotary',
    id: `theta=${theta}${scaling ? `;${JSON.stringify(scaling)}` : ''}`,
    theta,
    scaling,
    inverseFrequencies: ropeInverseFrequencies(theta, headDim, scaling),
  };
}

function layerOf(
  index: number,
  family: ModelType,
  window: number | null,
  rope: LayerRope,
): LayerArchitecture {
  const prefix = `model.layers.${index}`;
  const gemma = family === 'gemma3_text';
  const qkNorm = gemma || family === 'qwen3';
  return {
    index,
    attentionType: window === null ? 'full_attention' : 'sliding_attention',
    window,
    rope,
    attentionNorm: `${prefix}.input_layernorm.weight`,
    qNorm: qkNorm ? `${prefix}.self_attn.q_norm.weight` : null,
    kNorm: qkNorm ? `${prefix}.self_attn.k_norm.weight` : null,
    attentionOutputNorm: gemma ? `${prefix}.post_attention_layernorm.weight` : null,
    mlpNorm: gemma
      ? `${prefix}.pre_feedforward_layernorm.weight`
      : `${prefix}.post_attention_layernorm.weight`,
    mlpOutputNorm: gemma ? `${prefix}.post_feedforward_layernorm.weight` : null,
    q: `${prefix}.self_attn.q_proj`,
    k: `${prefix}.self_attn.k_proj`,
    v: `${prefix}.self_attn.v_proj`,
    o: `${prefix}.self_attn.o_proj`,
    gate: `${prefix}.mlp.gate_proj`,
    up: `${prefix}.mlp.up_proj`,
    down: `${prefix}.mlp.down_proj`,
  };
}

/**
 * The per-layer description of a model ({@link ModelArchitecture}) from its config (parsed with
 * {@link parseModelConfig} first, so a raw `config.json` object works too). This is the single
 * place the family rules live: Qwen3's and Gemma 3's q/k norms, Gemma 3's (1 + w) norms, four norms
 * per layer, GeGLU, √d embedding scale, `query_pre_attn_scalar`, sliding windows and local/global
 * RoPE, Llama 3's RoPE scaling, SmolLM3's NoPE layers.
 *
 * @example
 * ```ts
 * const arch = modelArchitecture(parseModelConfig(gemmaConfigJson));
 * arch.layers[0].window; // 512 (sliding), arch.layers[5].window: null (global)
 * arch.layers[0].rope.theta; // 10000 (local), arch.layers[5].rope.theta: 1e6
 * ```
 * @throws {InvalidArgumentError} like {@link parseModelConfig}.
 */
export function modelArchitecture(config: ModelConfig): ModelArchitecture {
  const parsed = parseModelConfig(config);
  const family = parsed.model_type;
  const headDim = parsed.head_dim;
  const global = rotary(parsed.rope_theta, parsed.rope_scaling ?? null, headDim);
  const local =
    parsed.rope_local_base_freq === undefined
      ? global
      : rotary(parsed.rope_local_base_freq, null, headDim);
  const none: LayerRope = { kind: 'none', id: 'none' };
  const layers = Array.from({ length: parsed.num_hidden_layers }, (_, index) => {
    const sliding = parsed.layer_types?.[index] === 'sliding_attention';
    const window = sliding ? (parsed.sliding_window as number) : null;
    const rope = parsed.no_rope_layers?.[index] === 0 ? none : sliding ? local : global;
    return layerOf(index, family, window, rope);
  });
  const gemma = family === 'gemma3_text';
  const tied = parsed.tie_word_embeddings;
  return {
    modelType: family,
    hiddenSize: parsed.hidden_size,
    intermediateSize: parsed.intermediate_size,
    vocabSize: parsed.vocab_size,
    heads: parsed.num_attention_heads,
    kvHeads: parsed.num_key_value_heads,
    headDim,
    normOffset: gemma ? 1 : 0,
    normEps: parsed.rms_norm_eps,
    activation: parsed.hidden_act === 'silu' ? 'silu' : 'gelu_tanh',
    embeddingScale: gemma ? Math.fround(Math.sqrt(parsed.hidden_size)) : 1,
    attentionScale: 1 / Math.sqrt(gemma ? (parsed.query_pre_attn_scalar as number) : headDim),
    biases: {
      qkv: parsed.attention_bias,
      o: parsed.attention_bias && family === 'llama',
    },
    finalLogitSoftcapping: null,
    embedding: 'model.embed_tokens.weight',
    finalNorm: 'model.norm.weight',
    lmHead: tied ? 'model.embed_tokens.weight' : 'lm_head.weight',
    tiedEmbeddings: tied,
    layers,
  };
}
