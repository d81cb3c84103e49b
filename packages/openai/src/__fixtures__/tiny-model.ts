import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import {
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  startOpenAICompatibleServer,
} from '../testing/openai-compatible-server.js';

const TEMPLATE =
  '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<eos>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}';

/** A tiny random Llama with a character tokenizer and a chat template (answers mean nothing). */
export function tinyCheckpoint(seed = 3) {
  const files = buildCharTokenizer({
    characters: 'abcdefgh0123456789 +=\n',
    specialTokens: { additional: ['<|user|>', '<|assistant|>'] },
    chatTemplate: TEMPLATE,
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
    max_position_embeddings: 256,
    bos_token_id: tokenizer.bosTokenId,
    eos_token_id: tokenizer.eosTokenId,
  });
  return {
    checkpoint: { ...createRandomCheckpoint(config, { seed, std: 0.3 }), tokenizer: files },
    tokenizer,
  };
}

/** The local sampler and an OpenAI-compatible server that generates with it. */
export async function servedTinyModel(
  server: Omit<OpenAICompatibleServerOptions, 'sampler' | 'tokenizer' | 'model'> & {
    model?: string;
  },
): Promise<{
  local: OnnxSampler;
  server: OpenAICompatibleServer;
  tokenizer: ReturnType<typeof createTokenizer>;
  close(): Promise<void>;
}> {
  const { checkpoint, tokenizer } = tinyCheckpoint();
  const local = await createOnnxSampler({ checkpoint, workers: 0, threads: 1, engine: 'optimum' });
  const running = await startOpenAICompatibleServer({
    model: 'tiny',
    ...server,
    sampler: local,
    tokenizer,
  });
  return {
    local,
    server: running,
    tokenizer,
    async close() {
      await running.close();
      await local.close();
    },
  };
}
