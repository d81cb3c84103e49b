/**
 * The shapes of real checkpoints the trainer bench measures (their config.json, from
 * `@rlvr/model/test`; random weights), each with the bench's batch (sequences × completion tokens
 * after one prompt token).
 */
import {
  GEMMA_3_1B,
  LLAMA_3_2_1B,
  QWEN2_5_0_5B,
  QWEN2_5_1_5B,
  QWEN3_0_6B,
  SMOLLM2_135M,
  SMOLLM2_360M,
} from '@rlvr/model/test';

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
    config: SMOLLM2_135M,
    batch: 4,
    seq: 128,
  },
  // HuggingFaceTB/SmolLM2-360M
  'SmolLM2-360M': {
    config: SMOLLM2_360M,
    batch: 2,
    seq: 128,
  },
  // Qwen/Qwen2.5-0.5B
  'Qwen2.5-0.5B': {
    config: QWEN2_5_0_5B,
    batch: 2,
    seq: 128,
  },
  // Qwen/Qwen2.5-1.5B
  'Qwen2.5-1.5B': {
    config: QWEN2_5_1_5B,
    batch: 1,
    seq: 128,
  },
  // Qwen/Qwen3-0.6B (q/k RMSNorm per head, head_dim 128 ≠ hidden / heads)
  'Qwen3-0.6B': {
    config: QWEN3_0_6B,
    batch: 2,
    seq: 128,
  },
  // meta-llama/Llama-3.2-1B (llama3 RoPE scaling)
  'Llama-3.2-1B': {
    config: LLAMA_3_2_1B,
    batch: 2,
    seq: 128,
  },
  // google/gemma-3-1b-pt (text: sliding window 512 on 5 of every 6 layers, GeGLU-tanh, four norms)
  'Gemma-3-1B': {
    config: GEMMA_3_1B,
    batch: 2,
    seq: 128,
  },
};
