import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../errors/model-load-error.js';
import { buildCharTokenizer, buildWordTokenizer } from './build-tokenizer.js';
import { createTokenizer, loadTokenizer } from './tokenizer.js';

// SmolLM2-Instruct's chat template (ChatML), verbatim from its tokenizer_config.json.
const chatML =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-tokenizer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('buildCharTokenizer', () => {
  const alphabet = '0123456789+=- \n';
  const tokenizer = createTokenizer(buildCharTokenizer({ characters: alphabet }));

  it('assigns special ids first, then characters in order', () => {
    expect([
      tokenizer.padTokenId,
      tokenizer.bosTokenId,
      tokenizer.eosTokenId,
      tokenizer.unkTokenId,
    ]).toEqual([0, 1, 2, 3]);
    expect(tokenizer.specialTokenIds).toEqual([0, 1, 2, 3]);
    expect(tokenizer.vocabSize).toBe(4 + alphabet.length);
    expect(tokenizer.encode('12+3=15', { addSpecialTokens: false })).toEqual([
      5, 6, 14, 7, 15, 5, 9,
    ]);
    expect(tokenizer.tokenToId('=')).toBe(15);
    expect(tokenizer.idToToken(4)).toBe('0');
  });

  it('round-trips any text over the alphabet (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 40 }), (characters) => {
        const text = characters.join('');
        const ids = tokenizer.encode(text);
        expect(ids).toHaveLength(characters.length);
        expect(tokenizer.decode(ids)).toBe(text);
      }),
      { seed: 1, numRuns: 200 },
    );
  });

  it('matches special tokens in text, maps unknown characters to unk, skips specials on request', () => {
    const ids = tokenizer.encode('<bos>1x2<eos>');
    expect(ids).toEqual([1, 5, 3, 6, 2]);
    expect(tokenizer.decode(ids)).toBe('<bos>1<unk>2<eos>');
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe('12');
  });

  it('supports extra special tokens and a chat template', () => {
    const files = buildCharTokenizer({
      characters: 'ab',
      specialTokens: { pad: null, unk: null, additional: ['<think>', '</think>'] },
      chatTemplate:
        '{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}{% if add_generation_prompt %}A:{% endif %}',
    });
    const tokenizer2 = createTokenizer(files);
    expect(tokenizer2.padTokenId).toBeUndefined();
    expect(tokenizer2.encode('<think>ab</think>', { addSpecialTokens: false })).toEqual([
      2, 4, 5, 3,
    ]);
    expect(tokenizer2.applyChatTemplate([{ role: 'user', content: 'ab' }])).toBe('<bos>user:abA:');
    expect(
      tokenizer2.applyChatTemplate([{ role: 'user', content: 'ab' }], {
        addGenerationPrompt: false,
      }),
    ).toBe('<bos>user:ab');
  });

  it('validates its options', () => {
    expect(() => buildCharTokenizer({ characters: '' })).toThrow(/options\.characters/);
    expect(() => buildCharTokenizer({ characters: 'aa' })).toThrow(/appear once/);
    expect(() => buildCharTokenizer({ characters: ['ab'] })).toThrow(/single characters/);
    expect(() =>
      buildCharTokenizer({ characters: 'a', specialTokens: { bos: '<x>', eos: '<x>' } }),
    ).toThrow(/distinct special tokens/);
    expect(() => tokenizer.applyChatTemplate([{ role: 'user', content: 'x' }])).toThrow(
      /chat_template/,
    );
  });
});

describe('buildWordTokenizer', () => {
  const tokenizer = createTokenizer(
    buildWordTokenizer({ words: ['the', 'answer', 'is', '0', '1', '+'] }),
  );

  it('encodes words, maps unknown words to unk and decodes with single spaces', () => {
    expect(tokenizer.encode('the answer is 1', { addSpecialTokens: false })).toEqual([4, 5, 6, 8]);
    expect(tokenizer.encode('the  answer\nis 42')).toEqual([4, 5, 6, 3]);
    expect(tokenizer.decode([4, 5, 6, 8])).toBe('the answer is 1');
    expect(tokenizer.decode([1, 4, 2], { skipSpecialTokens: true })).toBe('the');
  });

  it('rejects words with whitespace', () => {
    expect(() => buildWordTokenizer({ words: ['a b'] })).toThrow(/options\.words/);
  });
});

describe('loadTokenizer', () => {
  it('loads tokenizer.json + tokenizer_config.json (Hugging Face object-form special tokens, ChatML)', async () => {
    const files = buildCharTokenizer({
      characters: 'abcdefghijklmnopqrstuvwxyz ?\n',
      specialTokens: { bos: '<|im_start|>', eos: '<|im_end|>', pad: null },
    });
    const config = {
      ...(files.config as object),
      bos_token: { content: '<|im_start|>', lstrip: false },
      chat_template: chatML,
    };
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(files.json));
    await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const tokenizer = await loadTokenizer(dir);
    expect(tokenizer.bosTokenId).toBe(0);
    expect(tokenizer.eosTokenId).toBe(1);
    const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'hi?' }]);
    expect(prompt).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nhi?<|im_end|>\n<|im_start|>assistant\n',
    );
    const ids = tokenizer.encode(prompt, { addSpecialTokens: false });
    expect(ids[0]).toBe(0);
    expect(tokenizer.decode(ids)).toBe(prompt.replace(/[A-Z,]/g, '<unk>'));
    const fromFiles = await loadTokenizer(files);
    expect(fromFiles.encode('abc')).toEqual(tokenizer.encode('abc'));
  });

  it('fails with typed errors', async () => {
    await expect(loadTokenizer(join(dir, 'missing'))).rejects.toSatisfy(
      (error: unknown) =>
        ModelLoadError.isInstance(error) && /tokenizer\.json/.test((error as Error).message),
    );
    const bad = join(dir, 'bad');
    await rm(bad, { recursive: true, force: true });
    await import('node:fs/promises').then(({ mkdir }) => mkdir(bad));
    await writeFile(join(bad, 'tokenizer.json'), '[1, 2]');
    await expect(loadTokenizer(bad)).rejects.toThrow(ModelLoadError);
    expect(() => createTokenizer({ json: { model: { type: 'Nope' } } })).toThrow(ModelLoadError);
    expect(() => createTokenizer(null as never)).toThrow(/parameter 'files'/);
  });
});
