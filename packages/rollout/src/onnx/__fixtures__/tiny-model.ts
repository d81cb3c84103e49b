import {
  buildCharTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  parseLlamaConfig,
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
