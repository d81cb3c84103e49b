import { InvalidArgumentError, validateOptions } from '@rlvr/core';
import type { TokenizerFiles } from '../checkpoint/checkpoint.js';

/** Special tokens of a built tokenizer; `null` leaves one out. */
export type SpecialTokens = {
  /** Default `'<pad>'` (id 0). */
  pad?: string | null;
  /** Default `'<bos>'`. */
  bos?: string | null;
  /** Default `'<eos>'`. */
  eos?: string | null;
  /** Default `'<unk>'`: unknown characters/words encode to it. */
  unk?: string | null;
  /** More special tokens (e.g. `'<think>'`, `'<|user|>'`), after the four above. */
  additional?: string[];
};

/** Options shared by {@link buildCharTokenizer} and {@link buildWordTokenizer}. */
export type BuildTokenizerOptions = {
  specialTokens?: SpecialTokens;
  /** A Jinja chat template stored in `tokenizer_config.json`. */
  chatTemplate?: string;
};

const DEFAULT_SPECIALS = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' } as const;

function resolveSpecials(
  specialTokens: unknown,
  functionName: string,
): { roles: Record<'pad' | 'bos' | 'eos' | 'unk', string | null>; list: string[] } {
  const given = validateOptions<SpecialTokens>(specialTokens, {
    parameter: 'options.specialTokens',
    functionName,
    known: ['pad', 'bos', 'eos', 'unk', 'additional'],
  });
  const roles = { ...DEFAULT_SPECIALS } as Record<'pad' | 'bos' | 'eos' | 'unk', string | null>;
  for (const role of ['pad', 'bos', 'eos', 'unk'] as const) {
    const value = given[role];
    if (value === undefined) continue;
    if (value !== null && (typeof value !== 'string' || value.length === 0)) {
      throw new InvalidArgumentError({
        parameter: `options.specialTokens.${role}`,
        functionName,
        value,
        expected: 'a non-empty string or null',
      });
    }
    roles[role] = value;
  }
  const additional = given.additional ?? [];
  if (
    !Array.isArray(additional) ||
    !additional.every((item) => typeof item === 'string' && item.length > 0)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.specialTokens.additional',
      functionName,
      value: additional,
      expected: 'an array of non-empty strings',
    });
  }
  const list = [roles.pad, roles.bos, roles.eos, roles.unk, ...additional].filter(
    (item): item is string => item !== null,
  );
  const seen = new Set<string>();
  for (const token of list) {
    if (seen.has(token)) {
      throw new InvalidArgumentError({
        parameter: 'options.specialTokens',
        functionName,
        value: token,
        expected: 'distinct special tokens',
      });
    }
    seen.add(token);
  }
  return { roles, list };
}

function buildFiles(
  functionName: string,
  options: BuildTokenizerOptions,
  symbols: string[],
  symbolParameter: string,
  makeModel: (vocab: Record<string, number>, unk: string | null) => object,
  pieces: { preTokenizer: object; decoder: object },
): TokenizerFiles {
  const { roles, list } = resolveSpecials(options.specialTokens, functionName);
  if (options.chatTemplate !== undefined && typeof options.chatTemplate !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.chatTemplate',
      functionName,
      value: options.chatTemplate,
      expected: 'a Jinja template string',
    });
  }
  const vocab: Record<string, number> = {};
  for (const [index, token] of list.entries()) vocab[token] = index;
  let next = Object.keys(vocab).length;
  for (const symbol of symbols) {
    if (Object.hasOwn(vocab, symbol)) {
      throw new InvalidArgumentError({
        parameter: symbolParameter,
        functionName,
        value: symbol,
        expected: 'entries that appear once and differ from the special tokens',
      });
    }
    vocab[symbol] = next++;
  }
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: list.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: pieces.preTokenizer,
    post_processor: null,
    decoder: pieces.decoder,
    model: makeModel(vocab, roles.unk),
  };
  const config: Record<string, unknown> = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    clean_up_tokenization_spaces: false,
    model_max_length: 1_000_000,
  };
  for (const role of ['bos', 'eos', 'pad', 'unk'] as const) {
    if (roles[role] !== null) config[`${role}_token`] = roles[role];
  }
  const additional = list.filter((token) => !Object.values(roles).includes(token));
  if (additional.length > 0) config.additional_special_tokens = additional;
  if (options.chatTemplate !== undefined) config.chat_template = options.chatTemplate;
  return { json, config };
}

/**
 * Builds a character-level `tokenizer.json` (+ `tokenizer_config.json`) for synthetic tasks: special
 * tokens first (pad, bos, eos, unk, then `additional`), then one token per character in the order
 * given. Encoding splits text into characters (special tokens written in the text are matched
 * first); decoding concatenates, so `decode(encode(text)) === text` for text over the alphabet.
 * The result loads with {@link createTokenizer} and with Hugging Face / transformers.js tokenizers
 * (a BPE model without merges).
 *
 * @example
 * ```ts
 * const files = buildCharTokenizer({ characters: '0123456789+= ' });
 * const tokenizer = createTokenizer(files); // ids: <pad>=0 <bos>=1 <eos>=2 <unk>=3 '0'=4 …
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for an empty alphabet or duplicate entries.
 */
export function buildCharTokenizer(
  options: BuildTokenizerOptions & { characters: string | string[] },
): TokenizerFiles {
  const functionName = 'buildCharTokenizer';
  const opts = validateOptions<BuildTokenizerOptions & { characters: string | string[] }>(options, {
    parameter: 'options',
    functionName,
    known: ['characters', 'specialTokens', 'chatTemplate'],
  });
  const characters = typeof opts.characters === 'string' ? [...opts.characters] : opts.characters;
  if (
    !Array.isArray(characters) ||
    characters.length === 0 ||
    !characters.every((item) => typeof item === 'string' && [...item].length === 1)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.characters',
      functionName,
      value: opts.characters,
      expected: 'a non-empty string or array of single characters',
    });
  }
  return buildFiles(
    functionName,
    opts,
    characters,
    'options.characters',
    (vocab, unk) => ({
      type: 'BPE',
      dropout: null,
      unk_token: unk,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    }),
    {
      preTokenizer: { type: 'Split', pattern: { Regex: '' }, behavior: 'Isolated', invert: false },
      decoder: { type: 'Fuse' },
    },
  );
}

/**
 * Builds a word-level `tokenizer.json` (+ `tokenizer_config.json`) for synthetic tasks: special
 * tokens first, then one token per word. Text is split on whitespace; a word not in the list
 * encodes to the unk token. Decoding joins words with single spaces (so whitespace other than
 * single spaces does not round-trip). Implemented as a WordPiece model without subwords, which
 * `@huggingface/tokenizers`, transformers.js and Hugging Face all load.
 *
 * @example
 * ```ts
 * const files = buildWordTokenizer({ words: ['the', 'answer', 'is', '0', '1'] });
 * createTokenizer(files).encode('the answer is 1', { addSpecialTokens: false }); // [4, 5, 6, 8]
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for an empty list, duplicates or words with
 * whitespace.
 */
export function buildWordTokenizer(
  options: BuildTokenizerOptions & { words: string[] },
): TokenizerFiles {
  const functionName = 'buildWordTokenizer';
  const opts = validateOptions<BuildTokenizerOptions & { words: string[] }>(options, {
    parameter: 'options',
    functionName,
    known: ['words', 'specialTokens', 'chatTemplate'],
  });
  const words = opts.words;
  if (
    !Array.isArray(words) ||
    words.length === 0 ||
    !words.every((word) => typeof word === 'string' && word.length > 0 && !/\s/.test(word))
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.words',
      functionName,
      value: words,
      expected: 'a non-empty array of non-empty words without whitespace',
    });
  }
  return buildFiles(
    functionName,
    opts,
    words,
    'options.words',
    (vocab, unk) => ({
      type: 'WordPiece',
      unk_token: unk ?? '',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab,
    }),
    {
      preTokenizer: { type: 'WhitespaceSplit' },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
    },
  );
}
