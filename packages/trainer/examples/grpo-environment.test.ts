import '@tensorflow/tfjs-core/dist/register_all_gradients';
import {
  buildFamilyTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { HERMES_CHAT_TEMPLATE } from '@rlvr/rollout';
import { describe, expect, it } from 'vitest';
import { trainWithCalculator } from './grpo-environment.js';

describe('examples/grpo-environment.ts (README: multi-turn GRPO with tools)', () => {
  it('trains 1 step of a tiny random model against the calculator environment', async () => {
    const tokenizer = buildFamilyTokenizer({
      family: 'qwen3',
      corpus: [
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2 * 3"}}\n</tool_call>',
      ],
      merges: 20,
      chatTemplate: HERMES_CHAT_TEMPLATE,
    });
    const config = parseLlamaConfig({
      hidden_size: 16,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      intermediate_size: 24,
      vocab_size: createTokenizer(tokenizer).vocabSize,
      max_position_embeddings: 1024,
    });
    const checkpoint = { ...createRandomCheckpoint(config, { seed: 1 }), tokenizer };
    const dataset = [{ id: 'a', prompt: 'What is 2 * 3?', answer: '6' }];
    const result = await trainWithCalculator(checkpoint, dataset, 1);
    expect(result.steps).toBe(1);
  }, 120_000);
});
