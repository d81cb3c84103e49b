/**
 * Python-equivalent text primitives for IFEval's checks: `\w` and `\b` as Python's `re` has them
 * for `str` patterns, `str.isupper`/`str.islower`, `str.split()`, the sentence count of NLTK's
 * Punkt (`punkt.ts`) and a Treebank-like word tokenizer (IFEval uses nltk for the last two).
 */
import { punktSpans } from './punkt.js';

/** Python's `\w` for str patterns: letters, numbers (Nd/Nl/No) and `_` (not combining marks). */
export const WORD_CHAR = '[\\p{L}\\p{N}_]';
/** Python's `\b`. */
export const WORD_BOUNDARY = `(?:(?<=${WORD_CHAR})(?!${WORD_CHAR})|(?<!${WORD_CHAR})(?=${WORD_CHAR}))`;

/** IFEval's `count_words`: nltk's `RegexpTokenizer(r"\w+")` token count. */
export function countWordTokens(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(/[\p{L}\p{N}_]+/gu)) count++;
  return count;
}

/** Python's `str.isupper()`: at least one cased character and none lower- or title-case. */
export function isUpper(text: string): boolean {
  return /\p{Uppercase}/u.test(text) && !/[\p{Lowercase}\p{Lt}]/u.test(text);
}

/** Python's `str.islower()`: at least one cased character and none upper- or title-case. */
export function isLower(text: string): boolean {
  return /\p{Lowercase}/u.test(text) && !/[\p{Uppercase}\p{Lt}]/u.test(text);
}

/** Python's whitespace for `str.split()` / `str.strip()`. */
const SPACE_CLASS = `\\s${String.fromCharCode(0x1c)}-${String.fromCharCode(0x1f, 0x85)}`;
const PY_SPACE = new RegExp(`[${SPACE_CLASS}]+`, 'u');
const NOT_PY_SPACE = new RegExp(`[^${SPACE_CLASS}]`, 'u');

/** `str.split()[0]` of a non-blank text, without splitting all of it. */
export function firstToken(text: string): string {
  const start = text.search(NOT_PY_SPACE);
  const rest = text.slice(start);
  const end = rest.search(PY_SPACE);
  return end < 0 ? rest : rest.slice(0, end);
}

/** Python's `str.split()` (no argument). */
export function pySplit(text: string): string[] {
  return text.split(PY_SPACE).filter((part) => part !== '');
}

/** Python's `str.strip(chars)`. */
export function stripChars(text: string, chars: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && chars.includes(text[start]!)) start++;
  while (end > start && chars.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/** IFEval's `count_sentences`: the sentences NLTK's Punkt (English model) finds. */
export function countSentences(text: string): number {
  return punktSpans(text).length;
}

const CONTRACTION = /^(.*[^'])('[sSmMdD]|'ll|'LL|'re|'RE|'ve|'VE|n't|N'T)$/u;
/** Treebank's CONTRACTIONS2/3: `cannot` → `can not`, `gonna` → `gon na`, `'tis` → `'t is`, … */
const SPLIT_WORD =
  /^(can)(not)$|^(d)('ye)$|^(gim)(me)$|^(gon)(na)$|^(got)(ta)$|^(lem)(me)$|^(more)('n)$|^(wan)(na)$|^('t)(is|was)$/iu;

/**
 * Word tokens as nltk's `word_tokenize` (Treebank) splits them, for counting capitalized words:
 * whitespace, then punctuation (`, ; : @ # $ % & ? ! " ( ) [ ] { } < >` and quotes) as separate
 * tokens, then contractions (`DON'T` → `DO`, `N'T`; `IT'S` → `IT`, `'S`). Hyphenated words and
 * dotted abbreviations (`U.S.`) stay one token.
 */
export function wordTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const word of pySplit(text)) {
    if (!CASED.test(word)) tokens.push(word);
    else if (/^[\p{L}\p{N}]+$/u.test(word) && !SPLIT_WORD.test(word)) tokens.push(word);
    else splitPunctuation(word, tokens);
  }
  return tokens;
}

const CASED = /[\p{Uppercase}\p{Lowercase}\p{Lt}]/u;

/** IFEval's capital words: {@link wordTokens} that are `isupper()`. */
export function countCapitalWords(text: string): number {
  let count = 0;
  for (const word of pySplit(text)) {
    if (!/\p{Uppercase}/u.test(word)) continue;
    const tokens: string[] = [];
    if (/^[\p{L}\p{N}]+$/u.test(word) && !SPLIT_WORD.test(word)) tokens.push(word);
    else splitPunctuation(word, tokens);
    for (const token of tokens) if (isUpper(token)) count++;
  }
  return count;
}

function splitPunctuation(text: string, tokens: string[]): void {
  for (const chunk of text.split(
    /[\s,;@#$%&?!"()[\]{}<>“”‘’«»`]+|:(?!\d)|(?<!\p{L})'|'(?!\p{L})/u,
  )) {
    if (!chunk) continue;
    const piece = chunk.replace(/\.+$/u, '') || chunk;
    const contraction = CONTRACTION.exec(piece);
    const split = contraction ? null : SPLIT_WORD.exec(piece);
    if (contraction) tokens.push(contraction[1]!, contraction[2]!);
    else if (split) tokens.push(...split.slice(1).filter((part) => part !== undefined));
    else tokens.push(piece);
  }
}
