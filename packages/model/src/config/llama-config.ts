import { InvalidArgumentError } from '@rlvr/core';

/** Model families this package reads, writes, runs and exports (all Llama-style decoders). */
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

const functionName = 'parseLlamaConfig';

function fail(field: string, value: unknown, expected: string): never {
  throw new InvalidArgumentError({ parameter: `config.${field}`, functionName, value, expected });
}

function positiveInteger(raw: Record<string, unknown>, field: string, fallback?: number): number {
  const value = raw[field] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    fail(field, value, 'a positive integer');
  }
  return value;
}

function positiveNumber(raw: Record<string, unknown>, field: string, fallback: number): number {
  const value = raw[field] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(field, value, 'a finite number > 0');
  }
  return value;
}

function booleanField(raw: Record<string, unknown>, field: string, fallback: boolean): boolean {
  const value = raw[field] ?? fallback;
  if (typeof value !== 'boolean') fail(field, value, 'a boolean');
  return value;
}

function tokenId(raw: Record<string, unknown>, field: string): number | null {
  const value = raw[field] ?? null;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    fail(field, value, 'a non-negative integer token id or null');
  }
  return value;
}

/**
 * Validates a Llama-family `config.json` object (Hugging Face field names) and fills in Hugging
 * Face's defaults. Accepts SmolLM2 / Llama (`model_type: 'llama'`) and Qwen2 / Qwen2.5
 * (`model_type: 'qwen2'`, implicit q/k/v bias) configs; unknown extra fields are ignored.
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
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new InvalidArgumentError({
      parameter: 'config',
      functionName,
      value: json,
      expected: 'a config.json object',
    });
  }
  const raw = json as Record<string, unknown>;
  const modelType = raw.model_type ?? 'llama';
  if (!(SUPPORTED_MODEL_TYPES as readonly unknown[]).includes(modelType)) {
    fail(
      'model_type',
      modelType,
      `one of ${SUPPORTED_MODEL_TYPES.map((t) => `'${t}'`).join(', ')}`,
    );
  }
  const model_type = modelType as LlamaModelType;

  const hidden_size = positiveInteger(raw, 'hidden_size');
  const num_hidden_layers = positiveInteger(raw, 'num_hidden_layers');
  const num_attention_heads = positiveInteger(raw, 'num_attention_heads');
  const num_key_value_heads = positiveInteger(raw, 'num_key_value_heads', num_attention_heads);
  if (num_attention_heads % num_key_value_heads !== 0) {
    fail(
      'num_key_value_heads',
      num_key_value_heads,
      `a divisor of num_attention_heads (${num_attention_heads})`,
    );
  }
  if (raw.head_dim == null && hidden_size % num_attention_heads !== 0) {
    fail('hidden_size', hidden_size, `a multiple of num_attention_heads (${num_attention_heads})`);
  }
  const head_dim = positiveInteger(raw, 'head_dim', hidden_size / num_attention_heads);
  if (head_dim % 2 !== 0) fail('head_dim', head_dim, 'an even integer (RoPE rotates pairs)');
  const intermediate_size = positiveInteger(raw, 'intermediate_size');
  const vocab_size = positiveInteger(raw, 'vocab_size');
  const max_position_embeddings = positiveInteger(raw, 'max_position_embeddings', 2048);
  const rms_norm_eps = positiveNumber(raw, 'rms_norm_eps', 1e-6);
  const rope_theta = positiveNumber(raw, 'rope_theta', 10000);
  const initializer_range = positiveNumber(raw, 'initializer_range', 0.02);
  const tie_word_embeddings = booleanField(raw, 'tie_word_embeddings', false);
  const attention_bias = model_type === 'qwen2' ? true : booleanField(raw, 'attention_bias', false);
  if (model_type === 'qwen2' && raw.attention_bias === false) {
    fail('attention_bias', false, 'true or absent for qwen2 (its q/k/v projections have bias)');
  }
  const hiddenAct = raw.hidden_act ?? 'silu';
  if (hiddenAct !== 'silu') fail('hidden_act', hiddenAct, "'silu'");
  if (raw.mlp_bias != null && raw.mlp_bias !== false) {
    fail('mlp_bias', raw.mlp_bias, 'false or absent (MLP bias is not supported)');
  }
  if (raw.rope_scaling != null) {
    fail('rope_scaling', raw.rope_scaling, 'null or absent (RoPE scaling is not supported)');
  }
  if (raw.use_sliding_window === true) {
    fail('use_sliding_window', true, 'false or absent (sliding-window attention is not supported)');
  }
  if (raw.pretraining_tp != null && raw.pretraining_tp !== 1) {
    fail('pretraining_tp', raw.pretraining_tp, '1 or absent');
  }
  const architecturesRaw = raw.architectures;
  let architectures: string[];
  if (architecturesRaw == null) {
    architectures = [model_type === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'];
  } else if (
    Array.isArray(architecturesRaw) &&
    architecturesRaw.every((item) => typeof item === 'string')
  ) {
    architectures = [...architecturesRaw];
  } else {
    fail('architectures', architecturesRaw, 'an array of strings');
  }
  let eos_token_id: number | number[] | null;
  const eosRaw = raw.eos_token_id ?? null;
  if (Array.isArray(eosRaw)) {
    if (!eosRaw.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0)) {
      fail('eos_token_id', eosRaw, 'a token id, an array of token ids, or null');
    }
    eos_token_id = [...(eosRaw as number[])];
  } else {
    eos_token_id = tokenId(raw, 'eos_token_id');
  }
  return {
    model_type,
    architectures,
    hidden_size,
    num_hidden_layers,
    num_attention_heads,
    num_key_value_heads,
    head_dim,
    intermediate_size,
    rms_norm_eps,
    rope_theta,
    vocab_size,
    tie_word_embeddings,
    max_position_embeddings,
    attention_bias,
    hidden_act: 'silu',
    initializer_range,
    bos_token_id: tokenId(raw, 'bos_token_id'),
    eos_token_id,
    pad_token_id: tokenId(raw, 'pad_token_id'),
  };
}

/** Which projections carry a bias vector under `config` (Hugging Face semantics). */
export function llamaBiases(config: Pick<LlamaConfig, 'attention_bias' | 'model_type'>): {
  qkv: boolean;
  o: boolean;
} {
  return {
    qkv: config.attention_bias,
    o: config.attention_bias && config.model_type === 'llama',
  };
}

/** Number of parameters of a model with this config (tied embeddings counted once). */
export function countParameters(config: LlamaConfig): number {
  const {
    hidden_size: h,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: d,
  } = config;
  const biases = llamaBiases(config);
  const attention =
    h * heads * d * 2 +
    h * kvHeads * d * 2 +
    (biases.qkv ? heads * d + 2 * kvHeads * d : 0) +
    (biases.o ? h : 0);
  const mlp = 3 * h * config.intermediate_size;
  const perLayer = attention + mlp + 2 * h;
  const embeddings = config.vocab_size * h * (config.tie_word_embeddings ? 1 : 2);
  return embeddings + config.num_hidden_layers * perLayer + h;
}
