import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFamilyTokenizer, type TokenizerFamily } from './family-tokenizer.js';
import { createTokenizer } from './tokenizer.js';

// The published chat templates of each family (see __fixtures__/chat-templates/README.md) rendered
// by @huggingface/jinja through createTokenizer, against the text transformers renders (worked out
// from each template by hand), then encoded: every special token one id, BOS only from the template.
const template = (name: string) =>
  readFileSync(
    join(import.meta.dirname, '__fixtures__', 'chat-templates', `${name}.jinja`),
    'utf8',
  );
const CORPUS = ['What is 12+30? 12 plus 30 is 42. The answer is 42.'];

function tokenizerOf(family: TokenizerFamily, name: string) {
  return createTokenizer(
    buildFamilyTokenizer({ family, corpus: CORPUS, chatTemplate: template(name) }),
  );
}

const QUESTION = { role: 'user', content: 'What is 12+30?' };

describe('Qwen3 chat template', () => {
  const tokenizer = tokenizerOf('qwen3', 'qwen3');

  it('enable_thinking: false closes an empty think block in the generation prompt', () => {
    const system = { role: 'system', content: 'Be brief.' };
    expect(tokenizer.applyChatTemplate([system, QUESTION])).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(tokenizer.applyChatTemplate([QUESTION], { variables: { enable_thinking: false } })).toBe(
      '<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it("drops the <think> block of assistant turns before the last user turn, keeps the last turn's", () => {
    const messages = [
      QUESTION,
      { role: 'assistant', content: '<think>\n12 plus 30.\n</think>\n\n42' },
      { role: 'user', content: 'And 1+1?' },
      { role: 'assistant', content: '<think>\nOne and one.\n</think>\n\n2' },
    ];
    expect(tokenizer.applyChatTemplate(messages, { addGenerationPrompt: false })).toBe(
      '<|im_start|>user\nWhat is 12+30?<|im_end|>\n' +
        '<|im_start|>assistant\n42<|im_end|>\n' +
        '<|im_start|>user\nAnd 1+1?<|im_end|>\n' +
        '<|im_start|>assistant\n<think>\nOne and one.\n</think>\n\n2<|im_end|>\n',
    );
  });

  it('encodes specials and the (non-special) think tags as single tokens, no BOS', () => {
    const text = tokenizer.applyChatTemplate([QUESTION], { variables: { enable_thinking: false } });
    const ids = tokenizer.encode(text);
    const id = (token: string) => tokenizer.tokenToId(token) as number;
    expect(ids[0]).toBe(id('<|im_start|>'));
    for (const token of ['<|im_start|>', '<|im_end|>', '<think>', '</think>']) {
      expect(ids.filter((value) => value === id(token)).length, token).toBeGreaterThan(0);
    }
    expect(tokenizer.decode(ids)).toBe(text);
    expect(tokenizer.eosTokenId).toBe(id('<|im_end|>'));
    expect(tokenizer.bosTokenId).toBeUndefined();
  });
});

describe('Llama 3.2 chat template', () => {
  const tokenizer = tokenizerOf('llama3', 'llama3.2');

  it("renders the system header with today's date (strftime_now, as in transformers), BOS from the template only", () => {
    const text = tokenizer.applyChatTemplate([QUESTION]);
    const today = /Today Date: (\d{2} [A-Z][a-z]{2} \d{4})\n/.exec(text)?.[1];
    expect(today).toBeDefined();
    expect(text).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n' +
        `Cutting Knowledge Date: December 2023\nToday Date: ${today}\n\n<|eot_id|>` +
        '<|start_header_id|>user<|end_header_id|>\n\nWhat is 12+30?<|eot_id|>' +
        '<|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    const bos = tokenizer.tokenToId('<|begin_of_text|>') as number;
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(ids.filter((value) => value === bos)).toHaveLength(1);
    expect(tokenizer.encode('12', { addSpecialTokens: true })[0]).toBe(bos); // the post-processor
    expect(
      tokenizer.applyChatTemplate([QUESTION], { variables: { date_string: '03 Dec 2026' } }),
    ).toContain('Today Date: 03 Dec 2026\n');
  });
});

describe('Gemma 3 chat template', () => {
  const tokenizer = tokenizerOf('gemma3', 'gemma3');

  it('folds the system prompt into the first user turn; assistant is "model"', () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      QUESTION,
      { role: 'assistant', content: ' 42 ' },
      { role: 'user', content: 'And 1+1?' },
    ];
    const text = tokenizer.applyChatTemplate(messages);
    expect(text).toBe(
      '<bos><start_of_turn>user\nBe brief.\n\nWhat is 12+30?<end_of_turn>\n' +
        '<start_of_turn>model\n42<end_of_turn>\n' +
        '<start_of_turn>user\nAnd 1+1?<end_of_turn>\n<start_of_turn>model\n',
    );
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(ids[0]).toBe(tokenizer.bosTokenId);
    expect(ids.filter((value) => value === tokenizer.tokenToId('<end_of_turn>'))).toHaveLength(3);
    expect(tokenizer.decode(ids)).toBe(text);
    expect(() => tokenizer.applyChatTemplate([QUESTION, QUESTION])).toThrow(/alternate/);
  });
});

describe('SmolLM3 chat template', () => {
  const tokenizer = tokenizerOf('smollm3', 'smollm3');

  it('reasoning mode: /think by default, /no_think with enable_thinking false or in the system prompt', () => {
    const thinking = tokenizer.applyChatTemplate([QUESTION]);
    expect(thinking).toContain('Reasoning Mode: /think\n\n');
    expect(
      thinking.endsWith('<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n'),
    ).toBe(true);
    const plain = tokenizer.applyChatTemplate([QUESTION], {
      variables: { enable_thinking: false },
    });
    expect(plain).toContain('Reasoning Mode: /no_think\n\n');
    expect(plain.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n')).toBe(true);
    const bySystem = tokenizer.applyChatTemplate([
      { role: 'system', content: 'Be brief. /no_think' },
      QUESTION,
    ]);
    expect(bySystem).toContain('## Custom Instructions\n\nBe brief.\n\n');
    expect(bySystem).toContain('Reasoning Mode: /no_think');
  });
});
