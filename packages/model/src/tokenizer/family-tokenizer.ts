import { InvalidArgumentError, validateInteger, validateOneOf, validateOptions } from '@rlvr/core';
import type { TokenizerFiles } from '../checkpoint/checkpoint.js';
import { applyMerges, learnMerges } from './bpe-merges.js';
import { BYTE_TO_UNICODE, byteLevelText } from './byte-level.js';
import { SPLIT_PATTERNS } from './split-patterns.js';

/** Tokenizer formats of {@link buildFamilyTokenizer}: each family's real `tokenizer.json` layout. */
export const TOKENIZER_FAMILIES = ['qwen3', 'llama3', 'smollm3', 'gemma3'] as const;

/** One of {@link TOKENIZER_FAMILIES}. */
export type TokenizerFamily = (typeof TOKENIZER_FAMILIES)[number];

/** Options of {@link buildFamilyTokenizer}. */
export type BuildFamilyTokenizerOptions = {
  /** Whose `tokenizer.json` layout and special tokens to write. */
  family: TokenizerFamily;
  /** Text the merges are learned from (the base vocabulary covers any text: bytes, or byte fallback). */
  corpus: readonly string[];
  /** Most merges to learn (default 200; fewer when the corpus runs out of repeated pairs). */
  merges?: number;
  /** A Jinja chat template for `tokenizer_config.json` (e.g. the family's own). */
  chatTemplate?: string;
};

function javascriptPattern(digits: string): RegExp {
  const contractions = "'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])";
  return new RegExp(
    `${contractions}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|${digits}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
    'gu',
  );
}

type Special = { content: string; special: boolean };
const special = (content: string): Special => ({ content, special: true });
const tag = (content: string): Special => ({ content, special: false });

/** Added tokens of each family (a subset of the real ones, in their real order). */
const SPECIALS: Record<TokenizerFamily, Special[]> = {
  qwen3: [
    special('<|endoftext|>'),
    special('<|im_start|>'),
    special('<|im_end|>'),
    tag('<tool_call>'),
    tag('</tool_call>'),
    tag('<tool_response>'),
    tag('</tool_response>'),
    tag('<think>'),
    tag('</think>'),
  ],
  llama3: [
    special('<|begin_of_text|>'),
    special('<|end_of_text|>'),
    special('<|reserved_special_token_0|>'),
    special('<|reserved_special_token_1|>'),
    special('<|finetune_right_pad_id|>'),
    special('<|reserved_special_token_2|>'),
    special('<|start_header_id|>'),
    special('<|end_header_id|>'),
    special('<|eom_id|>'),
    special('<|eot_id|>'),
    special('<|python_tag|>'),
  ],
  smollm3: [
    special('<|begin_of_text|>'),
    special('<|end_of_text|>'),
    tag('<think>'),
    tag('</think>'),
    special('<|finetune_right_pad_id|>'),
    special('<|im_start|>'),
    special('<|im_end|>'),
  ],
  gemma3: [
    special('<pad>'),
    special('<eos>'),
    special('<bos>'),
    special('<unk>'),
    special('<mask>'),
    special('<start_of_turn>'),
    special('<end_of_turn>'),
  ],
};

/** `tokenizer_config.json` special-token roles per family. */
const ROLES: Record<TokenizerFamily, Record<string, string | null>> = {
  qwen3: { bos_token: null, eos_token: '<|im_end|>', pad_token: '<|endoftext|>', unk_token: null },
  llama3: { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>', unk_token: null },
  smollm3: {
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|finetune_right_pad_id|>',
    unk_token: null,
  },
  gemma3: { bos_token: '<bos>', eos_token: '<eos>', pad_token: '<pad>', unk_token: '<unk>' },
};

const BYTE_LEVEL = {
  type: 'ByteLevel',
  add_prefix_space: false,
  trim_offsets: false,
  use_regex: false,
};

function addedTokens(specials: Special[], firstId: number) {
  return specials.map((token, index) => ({
    id: firstId + index,
    content: token.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: token.special,
  }));
}

function bpeModel(vocab: Record<string, number>, merges: [string, string][], extra: object) {
  return {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    ...extra,
    vocab,
    merges: merges.map(([left, right]) => [left, right]),
  };
}

/** Vocabulary of a base alphabet plus the merged tokens, in that order, from id `firstId`. */
function vocabulary(alphabet: string[], merges: [string, string][], firstId: number) {
  const vocab: Record<string, number> = {};
  let next = firstId;
  for (const symbol of [...alphabet, ...merges.map(([left, right]) => left + right)]) {
    if (!(symbol in vocab)) vocab[symbol] = next++;
  }
  return { vocab, size: next };
}

/** Byte-level BPE (Qwen3, Llama 3, SmolLM3): 256 byte symbols, then merges, then added tokens. */
function byteLevelTokenizer(family: TokenizerFamily, corpus: readonly string[], count: number) {
  const pattern = family === 'qwen3' ? SPLIT_PATTERNS.qwen : SPLIT_PATTERNS.llama3;
  const split = javascriptPattern(pattern.digits);
  const normalize = (text: string) => (family === 'qwen3' ? text.normalize('NFC') : text);
  const words = corpus.flatMap((text) =>
    (normalize(text).match(split) ?? []).map((piece) => [...byteLevelText(piece)]),
  );
  const merges = learnMerges(words, count);
  const { vocab, size } = vocabulary([...BYTE_TO_UNICODE], merges, 0);
  const llama = family !== 'qwen3';
  const specials = SPECIALS[family];
  const bos = family === 'llama3' ? size : undefined;
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(specials, size),
    normalizer: llama ? null : { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: pattern.hf }, behavior: 'Isolated', invert: false },
        { ...BYTE_LEVEL, trim_offsets: llama },
      ],
    },
    post_processor:
      bos === undefined
        ? BYTE_LEVEL
        : {
            type: 'Sequence',
            processors: [
              { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
              templateProcessing('<|begin_of_text|>', bos),
            ],
          },
    decoder: llama
      ? { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }
      : BYTE_LEVEL,
    model: bpeModel(vocab, merges, { ignore_merges: llama }),
  };
  return { json, merges, split };
}

function templateProcessing(bos: string, id: number) {
  return {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [
      { SpecialToken: { id: bos, type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: bos, type_id: 1 } },
      { Sequence: { id: 'B', type_id: 1 } },
    ],
    special_tokens: { [bos]: { id: bos, ids: [id], tokens: [bos] } },
  };
}

/**
 * Gemma's SentencePiece-style BPE: spaces become `▁` (normalizer), no pre-split, byte fallback to
 * `<0xNN>` tokens for characters outside the vocabulary, BOS added by the post-processor.
 */
function sentencePieceTokenizer(corpus: readonly string[], count: number) {
  const specials = SPECIALS.gemma3;
  const bytes = Array.from(
    { length: 256 },
    (_, byte) => `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`,
  );
  const normalized = corpus.map((text) => text.replaceAll(' ', '▁'));
  const words = normalized.flatMap((text) =>
    (text.match(/▁*[^▁]+|▁+/gu) ?? []).map((piece) => [...piece]),
  );
  const merges = learnMerges(words, count);
  const characters = [...new Set(['▁', ...normalized.flatMap((text) => [...text])])];
  const { vocab } = vocabulary([...bytes, ...characters], merges, specials.length);
  for (const [index, token] of specials.entries()) vocab[token.content] = index;
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(specials, 0),
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
    pre_tokenizer: {
      type: 'Split',
      pattern: { String: ' ' },
      behavior: 'MergedWithPrevious',
      invert: false,
    },
    post_processor: templateProcessing('<bos>', 2),
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
      ],
    },
    model: bpeModel(vocab, merges, { unk_token: '<unk>', fuse_unk: true, byte_fallback: true }),
  };
  return { json, merges };
}

/**
 * A small tokenizer in a family's real Hugging Face format, with merges learned from `corpus`:
 * `tokenizer.json` as transformers writes it for that family (Qwen3: NFC + its split regex +
 * byte-level BPE; Llama 3 and SmolLM3: the Llama 3 split regex + byte-level BPE with
 * `ignore_merges`, Llama 3 adding `<|begin_of_text|>`; Gemma 3: `▁` normalizer, SentencePiece-style
 * BPE with byte fallback, `<bos>` added), the family's special tokens (a subset, in their order),
 * and `tokenizer_config.json` with the family's bos / eos / pad / unk roles and `chatTemplate`.
 * Real tokenizers cannot be downloaded here; these load through the same code paths.
 *
 * @example
 * ```ts
 * const files = buildFamilyTokenizer({ family: 'qwen3', corpus: ['12+3=15', 'The answer is 15.'] });
 * createTokenizer(files).encode('<|im_start|>user\n12+3=<|im_end|>');
 * ```
 * @throws {InvalidArgumentError} for an unknown family, an empty corpus or an invalid merge count.
 */
export function buildFamilyTokenizer(options: BuildFamilyTokenizerOptions): TokenizerFiles {
  const functionName = 'buildFamilyTokenizer';
  const opts = validateOptions<BuildFamilyTokenizerOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['family', 'corpus', 'merges', 'chatTemplate'],
  });
  const family = validateOneOf(opts.family, TOKENIZER_FAMILIES, {
    parameter: 'options.family',
    functionName,
  });
  if (
    !Array.isArray(opts.corpus) ||
    opts.corpus.length === 0 ||
    !opts.corpus.every((text) => typeof text === 'string')
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.corpus',
      functionName,
      value: opts.corpus,
      expected: 'a non-empty array of strings',
    });
  }
  const count = validateInteger(opts.merges ?? 200, {
    parameter: 'options.merges',
    functionName,
    min: 0,
  });
  if (opts.chatTemplate !== undefined && typeof opts.chatTemplate !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.chatTemplate',
      functionName,
      value: opts.chatTemplate,
      expected: 'a Jinja template string',
    });
  }
  const { json } =
    family === 'gemma3'
      ? sentencePieceTokenizer(opts.corpus, count)
      : byteLevelTokenizer(family, opts.corpus, count);
  const config: Record<string, unknown> = {
    ...Object.fromEntries(Object.entries(ROLES[family]).filter(([, value]) => value !== undefined)),
    add_bos_token: family === 'llama3' || family === 'gemma3',
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: 131072,
    tokenizer_class:
      family === 'gemma3'
        ? 'GemmaTokenizer'
        : family === 'qwen3'
          ? 'Qwen2Tokenizer'
          : 'PreTrainedTokenizerFast',
  };
  if (opts.chatTemplate !== undefined) config.chat_template = opts.chatTemplate;
  return { json, config };
}

/**
 * What {@link buildFamilyTokenizer}'s merges make of `text` with this package's own BPE (no
 * special tokens): the expected ids that tests compare `@huggingface/tokenizers` against. @internal
 */
export function encodeWithOwnBpe(
  files: TokenizerFiles,
  family: TokenizerFamily,
  text: string,
): number[] {
  const model = (files.json as { model: { vocab: Record<string, number>; merges: string[][] } })
    .model;
  const ranks = new Map(model.merges.map(([left, right], rank) => [`${left} ${right}`, rank]));
  const id = (symbol: string) => model.vocab[symbol] as number;
  if (family === 'gemma3') {
    const normalized = text.replaceAll(' ', '▁');
    return applyMerges([...normalized], ranks).flatMap((symbol) =>
      symbol in model.vocab
        ? [id(symbol)]
        : [...new TextEncoder().encode(symbol)].map((byte) =>
            id(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`),
          ),
    );
  }
  const pattern = family === 'qwen3' ? SPLIT_PATTERNS.qwen : SPLIT_PATTERNS.llama3;
  const normalized = family === 'qwen3' ? text.normalize('NFC') : text;
  const pieces = normalized.match(javascriptPattern(pattern.digits)) ?? [];
  return pieces.flatMap((piece) => applyMerges([...byteLevelText(piece)], ranks).map(id));
}
