import {
  buildCharTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  parseLlamaConfig,
  parseModelConfig,
  referenceForward,
} from '@rlvr/model';
import { TINY_FAMILY_CONFIGS } from '@rlvr/model/test';

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

/**
 * The tiny configs of `@rlvr/model/test` (every family rule on: Qwen3 q/k norm, Llama 3.x llama3
 * scaling, Gemma 3 window 3 with local/global layers, SmolLM3's NoPE layer) with this fixture's
 * vocabulary.
 */
export const FAMILY_CONFIGS = TINY_FAMILY_CONFIGS;

/** A tiny random model of `family` with the character tokenizer of {@link tinyCheckpoint}. */
export function tinyFamilyCheckpoint(family: keyof typeof FAMILY_CONFIGS, seed = 1): Checkpoint {
  const { tokenizer } = tinyCheckpoint();
  const config = parseModelConfig({
    ...FAMILY_CONFIGS[family],
    vocab_size: 4 + CHARACTERS.length,
    max_position_embeddings: 256,
  });
  return { ...createRandomCheckpoint(config, { seed, std: 0.3, perturbStd: 0.1 }), tokenizer };
}
