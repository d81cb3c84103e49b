import { InvalidArgumentError } from '@rlvr/core';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createTokenizer, type Tokenizer } from '../tokenizer/tokenizer.js';
import type { GgufEntry } from './gguf-encode.js';
import { GgufTokenType, GgufValueType } from './gguf-format.js';

/** GPT-2's `bytes_to_unicode`: byte → the printable character byte-level BPE uses for it. */
const BYTE_TO_UNICODE: string[] = (() => {
  const printable: number[] = [];
  for (let byte = 0x21; byte <= 0x7e; byte++) printable.push(byte);
  for (let byte = 0xa1; byte <= 0xac; byte++) printable.push(byte);
  for (let byte = 0xae; byte <= 0xff; byte++) printable.push(byte);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let byte = 0; byte < 256; byte++) {
    table[byte] = String.fromCodePoint(printable.includes(byte) ? byte : 256 + extra++);
  }
  return table;
})();

const encoder = new TextEncoder();

/** The byte-level (GPT-2) spelling of `text`: each UTF-8 byte as one printable character. */
export function byteLevelText(text: string): string {
  let out = '';
  for (const byte of encoder.encode(text)) out += BYTE_TO_UNICODE[byte];
  return out;
}

function isByteLevel(json: Record<string, unknown>): boolean {
  const has = (node: unknown): boolean => {
    if (node === null || typeof node !== 'object') return false;
    const item = node as { type?: unknown; pretokenizers?: unknown[] };
    if (item.type === 'ByteLevel') return true;
    return Array.isArray(item.pretokenizers) && item.pretokenizers.some(has);
  };
  return has(json.pre_tokenizer) || has(json.decoder);
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
  byteLevel: boolean,
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
    } else {
      token = byteLevel ? text : byteLevelText(text);
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
  const byteLevel = isByteLevel(json);
  const { tokens, types } = vocabulary(tokenizer, json, byteLevel, vocabSize, functionName);
  const merges = byteLevel ? byteLevelMerges(json) : characterMerges(tokens, types);
  const eos = eosIds(checkpoint, tokenizer.eosTokenId);
  const addsBos =
    tokenizer.bosTokenId !== undefined && tokenizer.encode('')[0] === tokenizer.bosTokenId;
  const entries: [string, GgufEntry][] = [
    ['tokenizer.ggml.model', { type: GgufValueType.STRING, value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: GgufValueType.STRING, value: 'default' }],
    ['tokenizer.ggml.tokens', { type: 9, itemType: GgufValueType.STRING, value: tokens }],
    ['tokenizer.ggml.token_type', { type: 9, itemType: GgufValueType.INT32, value: types }],
    ['tokenizer.ggml.merges', { type: 9, itemType: GgufValueType.STRING, value: merges }],
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
