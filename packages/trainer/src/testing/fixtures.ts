import { createRandomCheckpoint, type LlamaConfig, parseLlamaConfig } from '@rlvr/model';

/** Tiny configs that exercise every architectural branch (test-only). */
export const TINY_CONFIGS: Record<string, Partial<LlamaConfig> & Record<string, unknown>> = {
  'gqa-untied': {
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: 29,
    tie_word_embeddings: false,
    max_position_embeddings: 64,
  },
  'mha-tied-qwen2-bias': {
    model_type: 'qwen2',
    hidden_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 3,
    num_key_value_heads: 3,
    intermediate_size: 40,
    vocab_size: 31,
    tie_word_embeddings: true,
    max_position_embeddings: 64,
  },
  'mqa-llama-bias-headdim': {
    hidden_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 12,
    attention_bias: true,
    intermediate_size: 40,
    vocab_size: 23,
    tie_word_embeddings: false,
    max_position_embeddings: 64,
  },
};

/** A seeded random checkpoint of a tiny config, with perturbed norms and biases. */
export function tinyCheckpoint(name: keyof typeof TINY_CONFIGS & string, seed = 1) {
  const config = parseLlamaConfig(TINY_CONFIGS[name]);
  return createRandomCheckpoint(config, { seed, std: 0.2, perturbStd: 0.1 });
}
