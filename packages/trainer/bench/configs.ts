/** The two model configs of issue #14 that every trainer bench measures (Hugging Face field names). */
export type BenchConfig = {
  hidden_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  intermediate_size: number;
  vocab_size: number;
};

export const BENCH_CONFIGS: Record<string, BenchConfig> = {
  '0.8M': {
    hidden_size: 128,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 4,
    intermediate_size: 352,
    vocab_size: 64,
  },
  '5M': {
    hidden_size: 256,
    num_hidden_layers: 6,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    intermediate_size: 688,
    vocab_size: 1024,
  },
};
