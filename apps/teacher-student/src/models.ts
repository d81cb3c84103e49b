import {
  type Checkpoint,
  countParameters,
  createRandomCheckpoint,
  createTokenizer,
  type LlamaConfig,
  parseLlamaConfig,
  type Tokenizer,
  type TokenizerFiles,
} from '@rlvr/model';
import type { TokenSequence } from '@rlvr/trainer';
import type { ModelSize } from './config.js';

/** The Llama config of a model size over the task vocabulary. */
export function llamaConfigFor(
  size: ModelSize,
  vocabSize: number,
  maxPositions: number,
): LlamaConfig {
  return parseLlamaConfig({
    model_type: 'llama',
    vocab_size: vocabSize,
    hidden_size: size.hiddenSize,
    num_hidden_layers: size.layers,
    num_attention_heads: size.heads,
    num_key_value_heads: size.kvHeads,
    intermediate_size: size.intermediateSize,
    tie_word_embeddings: true,
    max_position_embeddings: maxPositions,
    rope_theta: 10000,
  });
}

/** A randomly initialized checkpoint with the task tokenizer and its EOS as generation stop. */
export function randomCheckpoint(
  size: ModelSize,
  tokenizerFiles: TokenizerFiles,
  options: { seed: number; maxPositions: number },
): Checkpoint {
  const tokenizer = createTokenizer(tokenizerFiles);
  const config = llamaConfigFor(size, tokenizer.vocabSize, options.maxPositions);
  return {
    ...createRandomCheckpoint(config, { seed: options.seed }),
    tokenizer: tokenizerFiles,
    generationConfig: {
      eos_token_id: tokenizer.eosTokenId,
      pad_token_id: tokenizer.padTokenId,
      bos_token_id: tokenizer.bosTokenId,
    },
  };
}

/** Parameter count of a size over the task vocabulary. */
export function parametersOf(size: ModelSize, vocabSize: number): number {
  return countParameters(llamaConfigFor(size, vocabSize, 128));
}

/** Encodes (prompt, completion text) as a training sequence; the completion ends with EOS. */
export function encodeExample(
  tokenizer: Tokenizer,
  prompt: string,
  completion: string,
): TokenSequence {
  return {
    promptIds: tokenizer.encode(prompt),
    completionIds: [
      ...tokenizer.encode(completion, { addSpecialTokens: false }),
      tokenizer.eosTokenId!,
    ],
  };
}
