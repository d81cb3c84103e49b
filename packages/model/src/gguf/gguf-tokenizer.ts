import { InvalidArgumentError } from '@rlvr/core';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { byteLevelText } from '../tokenizer/byte-level.js';
import { SPLIT_PATTERNS } from '../tokenizer/split-patterns.js';
import { createTokenizer, type Tokenizer } from '../tokenizer/tokenizer.js';
import type { GgufEntry } from './gguf-encode.js';
import { GgufTokenType, GgufValueType } from './gguf-format.js';

function isByteLevel(json: Record<string, unknown>): boolean {
  const has = (node: unknown): boolean => {
    if (node === null || typeof node !== 'object') return false;
    const item = node as { type?: unknown; pretokenizers?: unknown[] };
    if (item.type === 'ByteLevel') return true;
    return Array.isArray(item.pretokenizers) && item.pretokenizers.some(has);
  };
  return has(json.pre_tokenizer) || has(json.decoder);
}

/**
 * llama.cpp's pre-tokenizer name (`tokenizer.ggml.pre`) for the split regex of a byte-level
 * `tokenizer.json`: `qwen2` (Qwen2/Qwen3), `llama-bpe` (Llama 3, SmolLM3), else `default`.
 */
function preTokenizerName(json: Record<string, unknown>): string {
  const patterns: string[] = [];
  const collect = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    const item = node as {
      type?: unknown;
      pattern?: { Regex?: unknown };
      pretokenizers?: unknown[];
    };
    if (item.type === 'Split' && typeof item.pattern?.Regex === 'string')
      patterns.push(item.pattern.Regex);
    if (Array.isArray(item.pretokenizers)) item.pretokenizers.forEach(collect);
  };
  collect(json.pre_tokenizer);
  if (patterns.length !== 1) return 'default';
  if (patterns[0] === SPLIT_PATTERNS.qwen.hf) return 'qwen2';
  if (patterns[0] === SPLIT_PATTERNS.llama3.hf) return 'llama-bpe';
  return 'default';
}

/** A SentencePiece-style BPE (Gemma): `▁` for spaces and byte fallback to `<0xNN>` tokens. */
function isSentencePiece(json: Record<string, unknown>): boolean {
  const model = (json.model ?? {}) as { type?: unknown; byte_fallback?: unknown };
  const normalizer = json.normalizer as { type?: unknown; content?: unknown } | null | undefined;
  return (
    model.type === 'BPE' &&
    model.byte_fallback === true &&
    normalizer?.type === 'Replace' &&
    normalizer.content === '▁'
  );
}

/**
 * Scores of a SentencePiece-style vocabulary for llama.cpp's `llama` (SPM) tokenizer, which merges
 * the adjacent pair whose joined token scores highest: a merged token scores −(its merge rank + 1),
 * so merges apply in the order of `tokenizer.json`; other tokens 0.
 */
function mergeScores(json: Record<string, unknown>, tokens: readonly string[]): number[] {
  const model = (json.model ?? {}) as { merges?: unknown[] };
  const rank = new Map<string, number>();
  for (const [index, merge] of (model.merges ?? []).entries()) {
    const joined = Array.isArray(merge) ? merge.join('') : String(merge).replace(' ', '');
    if (!rank.has(joined)) rank.set(joined, index);
  }
  return tokens.map((token) => {
    const value = rank.get(token);
    return value === undefined ? 0 : -(value + 1);
  });
}

/** Merges of a byte-level BPE `tokenizer.json` as `'left right'` strings. */
function byteLevelMerges(json: Record<string, unknown>): string[] {
  const model = (json.model ?? {}) as { merges?: unknown[] };
  return (model.merges ?? []).map((merge) =>
    Array.isArray(merge) ? merge.join(' ') : String(merge),
  );
}

/** Merges that join the UTF-8 bytes of each multi-byte single-character token, left to right. */
function characterMerges(tokens: readonly string[], types: readonly number[]): string[] {
  const merges = new Set<string>();
  for (const [id, token] of tokens.entries()) {
    const chars = [...token];
    if (types[id] !== GgufTokenType.NORMAL || chars.length < 2) continue;
    let left = chars[0] as string;
    for (const char of chars.slice(1)) {
      merges.add(`${left} ${char}`);
      left += char;
    }
  }
  return [...merges];
}

function eosIds(checkpoint: Checkpoint, tokenizerEos: number | undefined): number[] {
  const ids: number[] = [];
  const add = (value: unknown): void => {
    for (const id of Array.isArray(value) ? value : [value]) {
      if (typeof id === 'number' && !ids.includes(id)) ids.push(id);
    }
  };
  add(tokenizerEos);
  add(checkpoint.config.eos_token_id);
  add((checkpoint.generationConfig as { eos_token_id?: unknown } | undefined)?.eos_token_id);
  return ids;
}

/** Token text and type of every id below `vocabSize` (see {@link tokenizerMetadata}). */
function vocabulary(
  tokenizer: Tokenizer,
  json: Record<string, unknown>,
  style: 'byte-level' | 'characters' | 'sentencepiece',
  vocabSize: number,
  functionName: string,
): { tokens: string[]; types: number[] } {
  const added = new Map<number, { special: boolean }>();
  for (const item of (json.added_tokens ?? []) as { id?: unknown; special?: unknown }[]) {
    if (typeof item?.id === 'number') added.set(item.id, { special: item.special === true });
  }
  const tokens: string[] = [];
  const types: number[] = [];
  const seen = new Map<string, number>();
  for (let id = 0; id < vocabSize; id++) {
    const text = id < tokenizer.vocabSize ? tokenizer.idToToken(id) : undefined;
    let token: string;
    let type: number;
    if (text === undefined) {
      token = `[PAD${id}]`;
      type = GgufTokenType.UNUSED;
    } else if (added.has(id)) {
      token = text;
      type = added.get(id)?.special ? GgufTokenType.CONTROL : GgufTokenType.USER_DEFINED;
    } else if (style === 'sentencepiece') {
      token = text;
      type = /^<0x[0-9A-F]{2}>$/.test(text)
        ? GgufTokenType.BYTE
        : id === tokenizer.unkTokenId
          ? GgufTokenType.UNKNOWN
          : GgufTokenType.NORMAL;
    } else {
      token = style === 'byte-level' ? text : byteLevelText(text);
      type = GgufTokenType.NORMAL;
    }
    const previous = seen.get(token);
    if (previous !== undefined) {
      throw new InvalidArgumentError({
        parameter: 'checkpoint.tokenizer',
        functionName,
        value: token,
        expected: `distinct token texts (ids ${previous} and ${id} both read '${token}' in GGUF)`,
      });
    }
    seen.set(token, id);
    tokens.push(token);
    types.push(type);
  }
  return { tokens, types };
}

/**
 * The `tokenizer.*` metadata of a checkpoint's tokenizer as a `gpt2` (byte-level BPE) vocabulary
 * of exactly `vocab_size` distinct tokens: byte-level token text, special tokens as CONTROL (their
 * text as is), ids the tokenizer leaves unused as `[PAD<id>]` (UNUSED); merges from a byte-level
 * BPE tokenizer, or merges that rebuild multi-byte characters for a character tokenizer; bos / eos
 * / unk / pad ids, a second EOS id as `eot_token_id`, and the chat template. @internal
 */
export function tokenizerMetadata(
  checkpoint: Checkpoint,
  functionName: string,
): [string, GgufEntry][] {
  const files = checkpoint.tokenizer;
  if (!files) {
    throw new InvalidArgumentError({
      parameter: 'checkpoint.tokenizer',
      functionName,
      value: undefined,
      expected: 'a tokenizer (a GGUF file carries its vocabulary; see buildCharTokenizer)',
    });
  }
  const tokenizer = createTokenizer(files);
  const vocabSize = checkpoint.config.vocab_size;
  if (tokenizer.vocabSize > vocabSize) {
    throw new InvalidArgumentError({
      parameter: 'checkpoint.tokenizer',
      functionName,
      value: tokenizer.vocabSize,
      expected: `a tokenizer with at most config.vocab_size (${vocabSize}) tokens`,
    });
  }
  const json = files.json as Record<string, unknown>;
  const style = isSentencePiece(json)
    ? 'sentencepiece'
    : isByteLevel(json)
      ? 'byte-level'
      : 'characters';
  const { tokens, types } = vocabulary(tokenizer, json, style, vocabSize, functionName);
  const eos = eosIds(checkpoint, tokenizer.eosTokenId);
  const addsBos =
    tokenizer.bosTokenId !== undefined && tokenizer.encode('')[0] === tokenizer.bosTokenId;
  const entries: [string, GgufEntry][] =
    style === 'sentencepiece'
      ? [
          ['tokenizer.ggml.model', { type: GgufValueType.STRING, value: 'llama' }],
          ['tokenizer.ggml.tokens', { type: 9, itemType: GgufValueType.STRING, value: tokens }],
          [
            'tokenizer.ggml.scores',
            { type: 9, itemType: GgufValueType.FLOAT32, value: mergeScores(json, tokens) },
          ],
          ['tokenizer.ggml.token_type', { type: 9, itemType: GgufValueType.INT32, value: types }],
          ['tokenizer.ggml.add_space_prefix', { type: GgufValueType.BOOL, value: false }],
        ]
      : [
          ['tokenizer.ggml.model', { type: GgufValueType.STRING, value: 'gpt2' }],
          [
            'tokenizer.ggml.pre',
            {
              type: GgufValueType.STRING,
              value: style === 'byte-level' ? preTokenizerName(json) : 'default',
            },
          ],
          ['tokenizer.ggml.tokens', { type: 9, itemType: GgufValueType.STRING, value: tokens }],
          ['tokenizer.ggml.token_type', { type: 9, itemType: GgufValueType.INT32, value: types }],
          [
            'tokenizer.ggml.merges',
            {
              type: 9,
              itemType: GgufValueType.STRING,
              value:
                style === 'byte-level' ? byteLevelMerges(json) : characterMerges(tokens, types),
            },
          ],
        ];
  const ids: [string, number | undefined][] = [
    ['bos_token_id', tokenizer.bosTokenId ?? checkpoint.config.bos_token_id ?? undefined],
    ['eos_token_id', eos[0]],
    ['eot_token_id', eos[1]],
    ['unknown_token_id', tokenizer.unkTokenId],
    ['padding_token_id', tokenizer.padTokenId ?? checkpoint.config.pad_token_id ?? undefined],
  ];
  for (const [key, id] of ids) {
    if (id !== undefined && id < vocabSize) {
      entries.push([`tokenizer.ggml.${key}`, { type: GgufValueType.UINT32, value: id }]);
    }
  }
  entries.push(['tokenizer.ggml.add_bos_token', { type: GgufValueType.BOOL, value: addsBos }]);
  entries.push(['tokenizer.ggml.add_eos_token', { type: GgufValueType.BOOL, value: false }]);
  if (tokenizer.chatTemplate !== undefined) {
    entries.push([
      'tokenizer.chat_template',
      { type: GgufValueType.STRING, value: tokenizer.chatTemplate },
    ]);
  }
  return entries;
}
