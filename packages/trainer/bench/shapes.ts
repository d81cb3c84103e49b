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
};
