import { modelArchitecture } from './architecture.js';
import { type ModelConfig, type ModelType, parseDecoderConfig } from './model-config.js';

/**
 * The Llama-style families of {@link parseLlamaConfig} (Llama without RoPE scaling, SmolLM2,
 * Qwen2/2.5): the ones every engine (incl. the trainer) implements. {@link MODEL_TYPES} and
 * {@link parseModelConfig} cover every family this package reads, runs and exports.
 */
export const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2'] as const;

/** One of {@link SUPPORTED_MODEL_TYPES}. */
export type LlamaModelType = (typeof SUPPORTED_MODEL_TYPES)[number];

/**
 * A Llama-family decoder configuration with Hugging Face's `config.json` field names, fully
 * resolved (every optional field filled with Hugging Face's default). Produced by
 * {@link parseLlamaConfig}; write it back with `JSON.stringify` and Hugging Face tools can read it.
 *
 * Architecture: token embedding → `num_hidden_layers` × (RMSNorm → grouped-query attention with
 * RoPE → residual → RMSNorm → SwiGLU MLP → residual) → RMSNorm → `lm_head` (or the transposed
 * embedding when `tie_word_embeddings`).
 */
export type LlamaConfig = {
  /** `'llama'` (SmolLM2, Llama 2/3 without rope scaling, TinyLlama) or `'qwen2'` (Qwen2/2.5). */
  model_type: LlamaModelType;
  /** Hugging Face class names, e.g. `['LlamaForCausalLM']` (defaults from `model_type`). */
  architectures: string[];
  /** Width of the residual stream. */
  hidden_size: number;
  /** Number of decoder layers. */
  num_hidden_layers: number;
  /** Number of query heads. */
  num_attention_heads: number;
  /** Number of key/value heads (grouped-query attention); divides `num_attention_heads`. */
  num_key_value_heads: number;
  /** Width of each attention head (default `hidden_size / num_attention_heads`); even. */
  head_dim: number;
  /** Width of the SwiGLU MLP. */
  intermediate_size: number;
  /** Epsilon inside RMSNorm's square root. */
  rms_norm_eps: number;
  /** RoPE base (θ). */
  rope_theta: number;
  /** Vocabulary size (rows of the embedding and of `lm_head`). */
  vocab_size: number;
  /** When true, `lm_head` is the embedding matrix and no `lm_head.weight` tensor is stored. */
  tie_word_embeddings: boolean;
  /** Longest sequence the model is meant for (not enforced by the forward pass). */
  max_position_embeddings: number;
  /**
   * Bias on the q/k/v projections (and, for `model_type: 'llama'`, on `o_proj` too, as in Hugging
   * Face's `LlamaAttention`). Always true for `qwen2`, whose configs omit the field.
   */
  attention_bias: boolean;
  /** Always `'silu'` (SwiGLU). */
  hidden_act: 'silu';
  /** Standard deviation used by {@link createRandomCheckpoint} (Hugging Face default 0.02). */
  initializer_range: number;
  /** Beginning-of-sequence token id, if the tokenizer has one. */
  bos_token_id: number | null;
  /** End-of-sequence token id(s) (Llama 3 lists several). */
  eos_token_id: number | number[] | null;
  /** Padding token id, if any. */
  pad_token_id: number | null;
};

/** The input accepted by {@link parseLlamaConfig}: required fields plus any optional ones. */
export type LlamaConfigInput = Pick<
  LlamaConfig,
  'hidden_size' | 'num_hidden_layers' | 'num_attention_heads' | 'intermediate_size' | 'vocab_size'
> &
  Partial<LlamaConfig> & { model_type?: string; [field: string]: unknown };

/**
 * Validates a Llama-family `config.json` object (Hugging Face field names) and fills in Hugging
 * Face's defaults. Accepts SmolLM2 / Llama (`model_type: 'llama'`) and Qwen2 / Qwen2.5
 * (`model_type: 'qwen2'`, implicit q/k/v bias) configs; unknown extra fields are ignored. Other
 * families (Qwen3, Gemma 3, SmolLM3, Llama 3.x with `rope_scaling`) are refused by name: read them
 * with {@link parseModelConfig} (a package that implements only these two keeps calling this one).
 *
 * @example
 * ```ts
 * const config = parseLlamaConfig(JSON.parse(readFileSync('SmolLM2-135M/config.json', 'utf8')));
 * config.num_key_value_heads; // 3
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the offending field (`config.hidden_size`,
 * …) for a missing or invalid value, an unsupported `model_type`, `hidden_act`, `rope_scaling` or
 * sliding-window attention, or heads that do not divide evenly.
 */
export function parseLlamaConfig(json: unknown): LlamaConfig {
  return parseDecoderConfig(json, {
    functionName: 'parseLlamaConfig',
    modelTypes: SUPPORTED_MODEL_TYPES,
    ropeScaling: false,
  }) as LlamaConfig;
}

/** Which projections carry a bias vector under `config` (Hugging Face semantics). */
export function llamaBiases(config: { attention_bias: boolean; model_type: ModelType }): {
  qkv: boolean;
  o: boolean;
} {
  return {
    qkv: config.attention_bias,
    o: config.attention_bias && config.model_type === 'llama',
  };
}

/**
 * Number of parameters of a model with this config, any family (tied embeddings counted once;
 * q/k norms and Gemma 3's extra norms included).
 */
export function countParameters(config: ModelConfig): number {
  const arch = modelArchitecture(config);
  const { hiddenSize: h, heads, kvHeads, headDim: d } = arch;
  const attention =
    h * heads * d * 2 +
    h * kvHeads * d * 2 +
    (arch.biases.qkv ? heads * d + 2 * kvHeads * d : 0) +
    (arch.biases.o ? h : 0);
  const mlp = 3 * h * arch.intermediateSize;
  let layers = 0;
  for (const layer of arch.layers) {
    const norms = [layer.attentionOutputNorm, layer.mlpOutputNorm].filter(Boolean).length + 2;
    layers += attention + mlp + norms * h + (layer.qNorm ? 2 * d : 0);
  }
  const embeddings = arch.vocabSize * h * (arch.tiedEmbeddings ? 1 : 2);
  return embeddings + layers + h;
}
