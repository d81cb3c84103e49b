import type { WeightedReward } from '@rlvr/core';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import type { PromptRecord } from '../grpo/prompt-dataset.js';
import { createLlamaModel } from '../model/llama-model.js';
import { type SamplerTokenizer, TfjsSampler } from './tfjs-sampler.js';

/**
 * A tiny synthetic verifiable task (test-only): the prompt is three digits and `>`, the answer is
 * the largest digit, e.g. `372>` → `7`. Character tokenizer from @rlvr/model.
 */
export function maxDigitTask() {
  const files = buildCharTokenizer({ characters: '0123456789>' });
  const tokenizer = createTokenizer(files);
  const samplerTokenizer: SamplerTokenizer = {
    encode: (text) => tokenizer.encode(text, { addSpecialTokens: false }),
    decode: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
    eosTokenId: tokenizer.eosTokenId!,
  };
  const records: PromptRecord[] = [];
  for (let value = 0; value < 1000; value++) {
    const digits = String(value).padStart(3, '0');
    records.push({
      id: digits,
      prompt: `${digits}>`,
      answer: String(Math.max(...[...digits].map(Number))),
    });
  }
  const rewards: WeightedReward[] = [
    { name: 'correct', fn: ({ completion, answer }) => (completion === answer ? 1 : 0) },
    { name: 'short', fn: ({ completion }) => (completion.length === 1 ? 1 : 0), weight: 0.1 },
  ];
  const config = parseLlamaConfig({
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 64,
    vocab_size: 16,
    max_position_embeddings: 16,
    tie_word_embeddings: true,
  });
  return {
    files,
    tokenizer: samplerTokenizer,
    records,
    rewards,
    config,
    async model(seed: number) {
      return createLlamaModel(createRandomCheckpoint(config, { seed, std: 0.1 }));
    },
    async sampler(model: Awaited<ReturnType<typeof createLlamaModel>>) {
      return TfjsSampler.fromModel(model, samplerTokenizer);
    },
  };
}
