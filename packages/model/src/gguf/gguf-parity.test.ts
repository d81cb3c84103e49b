import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { type LlamaConfigInput, parseLlamaConfig } from '../config/llama-config.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';
import { createTokenizer } from '../tokenizer/tokenizer.js';
import { encodeGgufCheckpoint, exportGguf, type GgufDtype } from './export-gguf.js';
import {
  maxAbsDifference,
  openInLlamaCpp,
  referenceGreedy,
  referenceLogProbs,
} from './llama-cpp-harness.js';

// llama.cpp (node-llama-cpp's prebuilt CPU binary, F32 KV cache, flash attention off) against the
// float64 reference: log p at every position and every vocab entry, the tokens fed in two calls
// (the second through the KV cache).
const TEMPLATE =
  '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<eos>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}';
const files = buildCharTokenizer({
  characters: 'abcdefghij0123456789+=? é→',
  specialTokens: { additional: ['<|user|>', '<|assistant|>'] },
  chatTemplate: TEMPLATE,
});
const tokenizer = createTokenizer(files);
const BASE = {
  hidden_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  intermediate_size: 64,
  vocab_size: tokenizer.vocabSize + 2, // two ids the tokenizer does not use
  bos_token_id: 1,
  eos_token_id: 2,
  pad_token_id: 0,
};
const VARIANTS: Record<string, Partial<LlamaConfigInput>> = {
  'llama tied': { tie_word_embeddings: true },
  'llama untied': {},
  'llama GQA + attention bias': { num_key_value_heads: 2, attention_bias: true },
  'llama MQA': { num_key_value_heads: 1 },
  'qwen2 GQA tied': { model_type: 'qwen2', num_key_value_heads: 2, tie_word_embeddings: true },
  'llama head_dim 16': { head_dim: 16, num_key_value_heads: 2 },
  'llama rope θ 500': { rope_theta: 500 },
  'qwen2 MQA untied rope θ 1e6': { model_type: 'qwen2', num_key_value_heads: 1, rope_theta: 1e6 },
};
const IDS = [1, 7, 11, 22, 6, 19, 30, 31, 8, 13, 5, 16, 24, 10];
const SPLIT = 9;

/**
 * Tolerances on max |Δ log p| over all positions and vocab entries, for these small random models
 * with sharp distributions (weights N(0, 0.2²)); measured maxima: f32 2.4e-6, f16 8.6e-3, bf16
 * 6.7e-2, q8_0 2.1e-1 (llama.cpp also rounds activations to the weight type in its dot products).
 */
const TOLERANCE: Record<GgufDtype, number> = { f32: 2e-5, f16: 2e-2, bf16: 0.15, q8_0: 0.5 };
const DTYPES = ['f32', 'f16', 'bf16', 'q8_0'] as const;

function makeCheckpoint(overrides: Partial<LlamaConfigInput>, seed: number): Checkpoint {
  const config = parseLlamaConfig({ ...BASE, ...overrides });
  const random = createRandomCheckpoint(config, { seed, std: 0.2, perturbStd: 0.1 });
  return { ...random, tokenizer: files };
}

let dir: string;
const measured: string[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-gguf-parity-'));
});
afterAll(async () => {
  console.log(`max |Δ log p| (max |Δ p|) vs the float64 reference:\n${measured.join('\n')}`);
  await rm(dir, { recursive: true, force: true });
});

async function compare(checkpoint: Checkpoint, bytes: Uint8Array) {
  const run = await openInLlamaCpp(dir, bytes, checkpoint.config.vocab_size);
  try {
    const actual = await run.logProbs([IDS.slice(0, SPLIT), IDS.slice(SPLIT)]);
    const expected = referenceLogProbs(checkpoint, IDS);
    return {
      logP: maxAbsDifference(actual, expected),
      p: maxAbsDifference(actual, expected, true),
    };
  } finally {
    await run.dispose();
  }
}

describe('GGUF export runs in llama.cpp like the float64 reference', () => {
  for (const [index, [variant, overrides]] of Object.entries(VARIANTS).entries()) {
    it(`${variant}: log p at every position and vocab entry, f32 / f16 / bf16 / q8_0`, async () => {
      const checkpoint = makeCheckpoint(overrides, 100 + index);
      for (const dtype of DTYPES) {
        const { logP, p } = await compare(checkpoint, exportGguf(checkpoint, { dtype }));
        measured.push(`${variant} ${dtype}: ${logP.toExponential(2)} (${p.toExponential(2)})`);
        expect.soft(logP, `${variant} ${dtype}`).toBeLessThan(TOLERANCE[dtype]);
      }
    });
  }

  it('negative control: without the q/k row permutation llama.cpp disagrees by nats', async () => {
    const checkpoint = makeCheckpoint(VARIANTS['llama GQA + attention bias'] ?? {}, 7);
    const options = { dtype: 'f32', name: 'x', permute: false, functionName: 'test' } as const;
    const { logP } = await compare(checkpoint, encodeGgufCheckpoint(checkpoint, options));
    measured.push(`negative control (no permutation) f32: ${logP.toExponential(2)}`);
    expect(logP).toBeGreaterThan(0.5);
    expect((await compare(checkpoint, exportGguf(checkpoint))).logP).toBeLessThan(TOLERANCE.f32);
  });

  it('f32 greedy generations are identical (llama and qwen2)', async () => {
    for (const variant of ['llama GQA + attention bias', 'qwen2 GQA tied']) {
      const checkpoint = makeCheckpoint(VARIANTS[variant] ?? {}, 11);
      const run = await openInLlamaCpp(dir, exportGguf(checkpoint), checkpoint.config.vocab_size);
      try {
        const prompt = IDS.slice(0, 6);
        expect(await run.greedy(prompt, 12), variant).toEqual(
          referenceGreedy(checkpoint, prompt, 12),
        );
      } finally {
        await run.dispose();
      }
    }
  });

  it('tokenizer, special tokens, EOS and chat template agree with @rlvr/model', async () => {
    const checkpoint = makeCheckpoint({}, 3);
    const run = await openInLlamaCpp(dir, exportGguf(checkpoint), checkpoint.config.vocab_size);
    try {
      const { model } = run;
      for (const text of ['1+2=3', 'abc? 0→9', 'é→é a', '<|user|>12+3=<eos><|assistant|>15<eos>']) {
        const ours = tokenizer.encode(text, { addSpecialTokens: false });
        expect(model.tokenize(text, true), text).toEqual(ours);
        expect(model.detokenize(ours as Token[], true), text).toBe(text);
      }
      expect(model.tokens.eos).toBe(2);
      expect(model.tokens.bos).toBe(1);
      expect(model.tokens.shouldPrependBosToken).toBe(false);
      expect(model.fileInfo.metadata.tokenizer.chat_template).toBe(TEMPLATE);
      expect(model.fileInfo.metadata.tokenizer.ggml.tokens).toHaveLength(BASE.vocab_size);
    } finally {
      await run.dispose();
    }
  });

  it("non-special added tokens (the app's <think> tags) tokenize and decode as one token each", async () => {
    const tags = ['<think>', '</think>', '<answer>', '</answer>'];
    const built = buildCharTokenizer({
      characters: '0123456789+=',
      specialTokens: { additional: tags },
    });
    const json = structuredClone(built.json) as {
      added_tokens: { content: string; special: boolean }[];
    };
    for (const token of json.added_tokens) if (tags.includes(token.content)) token.special = false;
    const tagged = { json, config: built.config };
    const ours = createTokenizer(tagged);
    const config = parseLlamaConfig({ ...BASE, vocab_size: ours.vocabSize });
    const checkpoint = { ...createRandomCheckpoint(config, { seed: 5 }), tokenizer: tagged };
    const run = await openInLlamaCpp(dir, exportGguf(checkpoint), config.vocab_size);
    try {
      const text = '<think>12+3=15</think><answer>15</answer>';
      const ids = ours.encode(text, { addSpecialTokens: false });
      expect(ids).toHaveLength(4 + 7 + 2); // four tags, "12+3=15", "15"
      expect(run.model.tokenize(text, false)).toEqual(ids);
      expect(run.model.detokenize(ids as Token[], false)).toBe(text);
    } finally {
      await run.dispose();
    }
  });
});
