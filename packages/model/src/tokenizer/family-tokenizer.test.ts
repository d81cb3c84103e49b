import { describe, expect, it } from 'vitest';
import { buildFamilyTokenizer, encodeWithOwnBpe, TOKENIZER_FAMILIES } from './family-tokenizer.js';
import { createTokenizer } from './tokenizer.js';

const CORPUS = [
  'Question: what is 12+30? Let me think. 12 plus 30 is 42.',
  "The answer is 42. It's 42, isn't it? Yes: 42!",
  'Naïve café — déjà vu, 日本語のテキスト, emojis 🤔✨.',
  '  indented\n\n\tnew lines and    spaces  ',
];
const TEXTS = [
  ...CORPUS,
  'unseen words: zebra quixotic 987654321',
  'Ünïcödé ß ſ ﬁ and 🦙 llamas',
  "I'M you'RE we'Ve  \r\n x",
];

describe.each(TOKENIZER_FAMILIES)('buildFamilyTokenizer %s', (family) => {
  const files = buildFamilyTokenizer({ family, corpus: CORPUS, merges: 120 });
  const tokenizer = createTokenizer(files);

  it("@huggingface/tokenizers encodes like this package's own BPE over the merges, and decodes back", () => {
    for (const text of TEXTS) {
      const ids = tokenizer.encode(text, { addSpecialTokens: false });
      expect(ids, text).toEqual(encodeWithOwnBpe(files, family, text));
      expect(tokenizer.decode(ids), text).toBe(text);
    }
  });
});

describe('buildFamilyTokenizer formats', () => {
  it('learns merges that shorten the corpus and puts the specials where each family has them', () => {
    for (const family of TOKENIZER_FAMILIES) {
      const files = buildFamilyTokenizer({ family, corpus: CORPUS, merges: 120 });
      const tokenizer = createTokenizer(files);
      const text = CORPUS[0] as string;
      expect(tokenizer.encode(text, { addSpecialTokens: false }).length, family).toBeLessThan(
        new TextEncoder().encode(text).length - 5,
      );
      const merges = (files.json as { model: { merges: unknown[] } }).model.merges;
      expect(merges.length, family).toBeGreaterThan(20);
      const json = files.json as { added_tokens: { id: number; content: string }[] };
      const first = json.added_tokens[0] as { id: number; content: string };
      // byte-level families: specials after the vocabulary; Gemma: <pad> <eos> <bos> <unk> first
      expect(first.id, family).toBe(
        family === 'gemma3' ? 0 : tokenizer.vocabSize - json.added_tokens.length,
      );
    }
  });

  it('Llama 3 and Gemma add BOS (post-processor), Qwen3 and SmolLM3 do not; Gemma falls back to bytes', () => {
    const bos = (family: (typeof TOKENIZER_FAMILIES)[number]) => {
      const tokenizer = createTokenizer(buildFamilyTokenizer({ family, corpus: CORPUS }));
      return (
        tokenizer.encode('12')[0] === tokenizer.bosTokenId && tokenizer.bosTokenId !== undefined
      );
    };
    expect(TOKENIZER_FAMILIES.map(bos)).toEqual([false, true, false, true]);
    const gemma = createTokenizer(buildFamilyTokenizer({ family: 'gemma3', corpus: CORPUS }));
    const llama = gemma.encode('🦙', { addSpecialTokens: false }).map((id) => gemma.idToToken(id));
    expect(llama).toEqual(['<0xF0>', '<0x9F>', '<0xA6>', '<0x99>']);
  });

  it('validates its options', () => {
    expect(() => buildFamilyTokenizer({ family: 'gpt2' as never, corpus: CORPUS })).toThrow(
      /options\.family/,
    );
    expect(() => buildFamilyTokenizer({ family: 'qwen3', corpus: [] })).toThrow(/options\.corpus/);
    expect(() => buildFamilyTokenizer({ family: 'qwen3', corpus: CORPUS, merges: -1 })).toThrow(
      /options\.merges/,
    );
    expect(() =>
      buildFamilyTokenizer({ family: 'qwen3', corpus: CORPUS, vocab: 3 } as never),
    ).toThrow(/UNKNOWN_OPTION|vocab/);
  });
});
