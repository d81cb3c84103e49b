/**
 * The shapes of real checkpoints the trainer bench measures (their config.json fields; random
 * weights), each with the bench's batch (sequences × completion tokens after one prompt token).
 */
export type BenchShape = {
  config: Record<string, unknown> & {
    hidden_size: number;
    num_hidden_layers: number;
    num_attention_heads: number;
    num_key_value_heads: number;
    intermediate_size: number;
    vocab_size: number;
    head_dim?: number;
    tie_word_embeddings?: boolean;
    model_type?: string;
    rope_theta?: number;
    rms_norm_eps?: number;
  };
  batch: number;
  seq: number;
};

export const SHAPES: Record<string, BenchShape> = {
  '5M': {
    config: {
      hidden_size: 256,
      num_hidden_layers: 6,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      intermediate_size: 688,
      vocab_size: 1024,
      max_position_embeddings: 2048,
    },
    batch: 16,
    seq: 128,
  },
  // HuggingFaceTB/SmolLM2-135M
  'SmolLM2-135M': {
    config: {
      model_type: 'llama',
      hidden_size: 576,
      num_hidden_layers: 30,
      num_attention_heads: 9,
      num_key_value_heads: 3,
      intermediate_size: 1536,
      vocab_size: 49152,
      tie_word_embeddings: true,
      rope_theta: 100000,
      rms_norm_eps: 1e-5,
      max_position_embeddings: 8192,
    },
    batch: 4,
    seq: 128,
  },
  // HuggingFaceTB/SmolLM2-360M
  'SmolLM2-360M': {
    config: {
      model_type: 'llama',
      hidden_size: 960,
      num_hidden_layers: 32,
      num_attention_heads: 15,
      num_key_value_heads: 5,
      intermediate_size: 2560,
      vocab_size: 49152,
      tie_word_embeddings: true,
      rope_theta: 100000,
      rms_norm_eps: 1e-5,
      max_position_embeddings: 8192,
    },
    batch: 2,
    seq: 128,
  },
  // Qwen/Qwen2.5-0.5B
  'Qwen2.5-0.5B': {
    config: {
      model_type: 'qwen2',
      hidden_size: 896,
      num_hidden_layers: 24,
      num_attention_heads: 14,
      num_key_value_heads: 2,
      intermediate_size: 4864,
      vocab_size: 151936,
      tie_word_embeddings: true,
      rope_theta: 1000000,
      rms_norm_eps: 1e-6,
      max_position_embeddings: 32768,
    },
    batch: 2,
    seq: 128,
  },
  // Qwen/Qwen2.5-1.5B
  'Qwen2.5-1.5B': {
    config: {
      model_type: 'qwen2',
      hidden_size: 1536,
      num_hidden_layers: 28,
      num_attention_heads: 12,
      num_key_value_heads: 2,
      intermediate_size: 8960,
      vocab_size: 151936,
      tie_word_embeddings: true,
      rope_theta: 1000000,
      rms_norm_eps: 1e-6,
      max_position_embeddings: 32768,
    },
    batch: 1,
    seq: 128,
  },
  // Qwen/Qwen3-0.6B (q/k RMSNorm per head, head_dim 128 ≠ hidden / heads)
  'Qwen3-0.6B': {
    config: {
      model_type: 'qwen3',
      hidden_size: 1024,
      num_hidden_layers: 28,
      num_attention_heads: 16,
      num_key_value_heads: 8,
      head_dim: 128,
      intermediate_size: 3072,
      vocab_size: 151936,
      tie_word_embeddings: true,
      rope_theta: 1000000,
      rms_norm_eps: 1e-6,
      max_position_embeddings: 40960,
    },
    batch: 2,
    seq: 128,
  },
  // meta-llama/Llama-3.2-1B (llama3 RoPE scaling)
  'Llama-3.2-1B': {
    config: {
      model_type: 'llama',
      hidden_size: 2048,
      num_hidden_layers: 16,
      num_attention_heads: 32,
      num_key_value_heads: 8,
      head_dim: 64,
      intermediate_size: 8192,
      vocab_size: 128256,
      tie_word_embeddings: true,
      rope_theta: 500000,
      rope_scaling: {
        rope_type: 'llama3',
        factor: 32,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 8192,
      },
      rms_norm_eps: 1e-5,
      max_position_embeddings: 131072,
    },
    batch: 2,
    seq: 128,
  },
  // google/gemma-3-1b-pt (text: sliding window 512 on 5 of every 6 layers, GeGLU-tanh, four norms)
  'Gemma-3-1B': {
    config: {
      model_type: 'gemma3_text',
      hidden_size: 1152,
      num_hidden_layers: 26,
      num_attention_heads: 4,
      num_key_value_heads: 1,
      head_dim: 256,
      intermediate_size: 6912,
      vocab_size: 262144,
      query_pre_attn_scalar: 256,
      sliding_window: 512,
      sliding_window_pattern: 6,
      rope_theta: 1000000,
      rope_local_base_freq: 10000,
      rms_norm_eps: 1e-6,
      max_position_embeddings: 32768,
    },
    batch: 2,
    seq: 128,
  },
};
