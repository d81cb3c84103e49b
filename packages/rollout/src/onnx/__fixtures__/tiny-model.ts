import {
  buildCharTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  parseLlamaConfig,
  parseModelConfig,
  referenceForward,
} from '@rlvr/model';

export const CHARACTERS = 'abcdefgh \n';

/**
 * A tiny random Llama (GQA: 4 heads, 2 KV heads, Qwen2-style q/k/v bias) with a character
 * tokenizer: <pad>=0 <bos>=1 <eos>=2 <unk>=3 'a'=4 …; `std` 0.3 makes its distributions peaked.
 */
export function tinyCheckpoint(seed = 1, kvHeads = 2): Checkpoint {
  const tokenizer = buildCharTokenizer({
    characters: CHARACTERS,
    chatTemplate:
      '{% for m in messages %}<bos>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}h {% endif %}',
  });
  const config = parseLlamaConfig({
    model_type: 'qwen2',
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: kvHeads,
    intermediate_size: 48,
    vocab_size: 4 + CHARACTERS.length,
    max_position_embeddings: 256,
  });
  const checkpoint = createRandomCheckpoint(config, { seed, std: 0.3, perturbStd: 0.1 });
  return { ...checkpoint, tokenizer };
}

/** Float64 reference logits of the next token after each position of one unpadded sequence. */
export function referenceLogits(checkpoint: Checkpoint, tokenIds: number[]): Float64Array[] {
  const { logits } = referenceForward(checkpoint, { inputIds: [tokenIds] });
  const vocab = logits.dims[2]!;
  return tokenIds.map((_, position) => logits.data.slice(position * vocab, (position + 1) * vocab));
}

/** Sizes shared by the tiny family models. */
const FAMILY_BASE = {
  hidden_size: 32,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 48,
  vocab_size: 4 + CHARACTERS.length,
  max_position_embeddings: 256,
};

/**
 * Tiny `config.json`s of the families beyond Llama/Qwen2, each rule switched on: Qwen3 (q/k norm,
 * head_dim 16), Llama 3.x (llama3 RoPE scaling, all three bands), Gemma 3 (window 3, local and
 * global layers, (1 + w) norms, GeGLU, query_pre_attn_scalar 12), SmolLM3 (4th layer without RoPE).
 */
export const FAMILY_CONFIGS = {
  qwen3: { ...FAMILY_BASE, num_hidden_layers: 2, model_type: 'qwen3', head_dim: 16 },
  llama3: {
    ...FAMILY_BASE,
    num_hidden_layers: 2,
    model_type: 'llama',
    rope_scaling: {
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 64,
    },
  },
  gemma3: {
    ...FAMILY_BASE,
    num_hidden_layers: 4,
    model_type: 'gemma3_text',
    head_dim: 8,
    query_pre_attn_scalar: 12,
    sliding_window: 3,
    sliding_window_pattern: 2,
    rope_theta: 10000,
    rope_local_base_freq: 100,
  },
  smollm3: { ...FAMILY_BASE, num_hidden_layers: 4, model_type: 'smollm3' },
} as const;

/** A tiny random model of `family` with the character tokenizer of {@link tinyCheckpoint}. */
export function tinyFamilyCheckpoint(family: keyof typeof FAMILY_CONFIGS, seed = 1): Checkpoint {
  const { tokenizer } = tinyCheckpoint();
  const config = parseModelConfig(FAMILY_CONFIGS[family]);
  return { ...createRandomCheckpoint(config, { seed, std: 0.3, perturbStd: 0.1 }), tokenizer };
}
