import { readFile } from 'node:fs/promises';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { startOpenAICompatibleServer } from '@rlvr/openai/test';
import { createOnnxSampler } from '@rlvr/rollout';
import { describe, expect, it } from 'vitest';
import { majorityVote } from '../src/vote/majority-vote.js';
import { selfConsistency } from './served-vote.js';

const EXAMPLE = new URL('./served-vote.ts', import.meta.url);
const README = new URL('../README.md', import.meta.url);

/** A tiny random chat model that writes digits (so the math extractor finds answers). */
function tinyChatModel() {
  const files = buildCharTokenizer({
    characters: '0123456789 +=',
    specialTokens: { additional: ['<|user|>', '<|assistant|>'] },
    chatTemplate:
      '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<eos>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}',
  });
  const tokenizer = createTokenizer(files);
  const config = parseLlamaConfig({
    model_type: 'llama',
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: tokenizer.vocabSize,
    max_position_embeddings: 1100,
    eos_token_id: tokenizer.eosTokenId,
  });
  return {
    checkpoint: { ...createRandomCheckpoint(config, { seed: 5, std: 0.3 }), tokenizer: files },
    tokenizer,
  };
}

describe('examples/served-vote.ts (the README served-model example)', () => {
  it('should vote over the served model exactly as over its samples drawn locally', async () => {
    const { checkpoint, tokenizer } = tinyChatModel();
    const local = await createOnnxSampler({ checkpoint, workers: 0, promptFormat: 'chat' });
    const server = await startOpenAICompatibleServer({
      sampler: local,
      tokenizer,
      dialect: 'vllm',
      model: 'tiny-chat',
    });
    try {
      const question = '12+30=';
      const result = await selfConsistency(server.baseURL, 'tiny-chat', question);
      // the server answered one request with n = 16 in vLLM's chat shape
      const requests = server.log.filter((entry) => entry.path === '/v1/chat/completions');
      expect(requests.map((entry) => entry.body?.n)).toEqual([16]);
      const [group] = await local.sample({
        prompts: [question],
        n: 16,
        maxNewTokens: 1024,
        temperature: 0.6,
        topP: 0.95,
        seed: 0,
      });
      const expected = majorityVote(group!.map((completion) => completion.text));
      expect(expected.answer).not.toBeNull();
      expect(result.answer).toBe(expected.answer);
      expect(result.share).toBe(expected.share);
      expect(result.margin).toBe(expected.margin);
      expect(result.tokensUsed).toBe(group!.reduce((sum, c) => sum + c.tokenIds.length, 0));
    } finally {
      await server.close();
      await local.close();
    }
  });

  it("should be exactly the README's first code block", async () => {
    const readme = await readFile(README, 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(await readFile(EXAMPLE, 'utf8'));
  });
});
