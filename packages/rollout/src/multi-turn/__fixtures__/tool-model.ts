import {
  buildFamilyTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
  type Tokenizer,
} from '@rlvr/model';
import { HERMES_CHAT_TEMPLATE } from '../hermes-template.js';

/** Text the tiny tokenizer's merges are learned from: tool calls, results and numbers. */
const CORPUS = [
  '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 * 34"}}\n</tool_call>',
  '<tool_response>\n408\n</tool_response>',
  'The answer is 408. What is 56 * 78? Use the calculator tool.',
];

/** A tokenizer in Qwen's format (`<|im_end|>` EOS, `<tool_call>` added tokens) with the Hermes template. */
export function toolTokenizerFiles() {
  return buildFamilyTokenizer({
    family: 'qwen3',
    corpus: CORPUS,
    merges: 40,
    chatTemplate: HERMES_CHAT_TEMPLATE,
  });
}

/**
 * A tiny random Qwen2-style model over {@link toolTokenizerFiles} whose head makes `</tool_call>`
 * and `<|im_end|>` likely (their rows are a common token's, scaled), so random turns end at the
 * tool-call end or EOS within a few tokens: multi-turn trajectories without training.
 */
export function toolCheckpoint(seed = 3): { checkpoint: Checkpoint; tokenizer: Tokenizer } {
  const files = toolTokenizerFiles();
  const tokenizer = createTokenizer(files);
  const config = parseLlamaConfig({
    model_type: 'qwen2',
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: tokenizer.vocabSize,
    max_position_embeddings: 1024,
    tie_word_embeddings: false,
  });
  const checkpoint = createRandomCheckpoint(config, { seed, std: 0.3, perturbStd: 0.1 });
  const head = checkpoint.tensors.find((tensor) => tensor.name === 'lm_head.weight')!;
  const hidden = config.hidden_size;
  const data = new Float32Array(head.data);
  // a direction most hidden states share: the mean of the head's rows, negated rows pushed away
  const mean = new Float32Array(hidden);
  for (let row = 0; row < config.vocab_size; row++)
    for (let column = 0; column < hidden; column++)
      mean[column]! += data[row * hidden + column]! / config.vocab_size;
  const boost = (token: number, scale: number) => {
    for (let column = 0; column < hidden; column++)
      data[token * hidden + column] = data[token * hidden + column]! + scale * mean[column]!;
  };
  boost(tokenizer.tokenToId('</tool_call>')!, 40);
  boost(tokenizer.tokenToId('<|im_end|>')!, 36);
  return {
    checkpoint: {
      ...checkpoint,
      tensors: checkpoint.tensors.map((tensor) => (tensor === head ? { ...head, data } : tensor)),
      tokenizer: files,
    },
    tokenizer,
  };
}
