/**
 * The Punkt sentence tokenizer (Kiss & Strunk 2006) as NLTK's `PunktSentenceTokenizer.tokenize`
 * applies it with its pretrained English model — what IFEval's `count_sentences` calls
 * (`nltk.data.load("nltk:tokenizers/punkt/english.pickle")`). The model's parameters are data
 * (`data/punkt-english.json`, read on first use); the decision rules are NLTK's: candidate ends `.`/`?`/`!` followed by
 * punctuation or a next token, a first pass on the word type (sentence-end marks, ellipses, known
 * abbreviations), a second pass on the pair (collocations, the orthographic heuristic, frequent
 * sentence starters, initials and numbers), and the realignment of closing quotes and brackets.
 * No npm package implements Punkt with this model; tests compare it with NLTK's own splits.
 */
import { readFileSync } from 'node:fs';
import { dataFile } from '../../data-files.js';

type Model = {
  abbreviations: Set<string>;
  collocations: Set<string>;
  starters: Set<string>;
  ortho: Map<string, number>;
};

const ORTHO_BEG_UC = 1 << 1;
const ORTHO_MID_UC = 1 << 2;
const ORTHO_UNK_UC = 1 << 3;
const ORTHO_BEG_LC = 1 << 4;
const ORTHO_MID_LC = 1 << 5;
const ORTHO_UNK_LC = 1 << 6;
const ORTHO_UC = ORTHO_BEG_UC | ORTHO_MID_UC | ORTHO_UNK_UC;
const ORTHO_LC = ORTHO_BEG_LC | ORTHO_MID_LC | ORTHO_UNK_LC;

let loaded: Model | undefined;

/** The English model, built from its data on first use (importing this module builds nothing). */
type ModelData = {
  abbreviations: string[];
  collocations: [string, string][];
  sentenceStarters: string[];
  orthographicContext: Record<string, string>;
};

function englishModel(): Model {
  if (loaded) return loaded;
  const model = JSON.parse(readFileSync(dataFile('punkt-english.json'), 'utf8')) as ModelData;
  const ortho = new Map<string, number>();
  for (const [flags, words] of Object.entries(model.orthographicContext)) {
    for (const word of words.split(' ')) ortho.set(word, Number(flags));
  }
  loaded = {
    abbreviations: new Set(model.abbreviations),
    collocations: new Set(model.collocations.map(([a, b]) => `${a} ${b}`)),
    starters: new Set(model.sentenceStarters),
    ortho,
  };
  return loaded;
}

/** Characters that cannot appear within words (NLTK's `_re_non_word_chars` for English). */
const NON_WORD = String.raw`[)";}\]*:@'({\[?!]`;
const MULTI_CHAR = String.raw`(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)`;
/** NLTK's `_word_tokenize_fmt`: multi-character punctuation, a word up to its end, or one char. */
const WORD_START = '[^("`{\\[:;&#*@)}\\]\\-,]';
const WORD = new RegExp(
  `${MULTI_CHAR}|(?=${WORD_START})\\S+?(?=\\s|$|${NON_WORD}|${MULTI_CHAR}|,(?=$|\\s|${NON_WORD}|${MULTI_CHAR}))|\\S`,
  'gu',
);
/** A possible sentence end and what follows it: other punctuation, or spaces and a token. */
const PERIOD_CONTEXT = new RegExp(String.raw`[.?!](?=(${NON_WORD}|\s+(\S+)))`, 'gu');
/** Closing punctuation at the very start of the next slice (sticky: Python's `re.match`). */
const REALIGNMENT = /["')\]}]+?(?:\s+|(?=--)|$)/muy;
const NUMERIC = /^-?[.,]?\p{Nd}[\p{Nd},.-]*\.?$/u;
const INITIAL = /^[\p{L}\p{Nl}\p{No}_]\.$/u;
const ELLIPSIS = /^\.\.+$/;
const PUNCTUATION = new Set([';', ':', ',', '.', '!', '?']);

type Token = {
  tok: string;
  type: string;
  periodFinal: boolean;
  sentbreak: boolean;
  abbr: boolean;
  ellipsis: boolean;
};

function token(tok: string): Token {
  const lower = tok.toLowerCase();
  return {
    tok,
    type: NUMERIC.test(lower) ? '##number##' : lower,
    periodFinal: tok.endsWith('.'),
    sentbreak: false,
    abbr: false,
    ellipsis: false,
  };
}

function typeNoPeriod(item: Token): string {
  return item.type.length > 1 && item.type.endsWith('.') ? item.type.slice(0, -1) : item.type;
}

function typeNoSentPeriod(item: Token): string {
  return item.sentbreak ? typeNoPeriod(item) : item.type;
}

/** Python's whitespace for `str.strip()`: `\s` and the separators U+001C–U+001F, U+0085. */
const PY_SPACE = `\\s${String.fromCharCode(0x1c)}-${String.fromCharCode(0x1f, 0x85)}`;
const BLANK = new RegExp(`^[${PY_SPACE}]*$`, 'u');
const TRAILING_SPACE = new RegExp(`[${PY_SPACE}]+$`, 'u');

function isBlank(text: string): boolean {
  return BLANK.test(text);
}

function words(text: string): Token[] {
  const tokens: Token[] = [];
  for (const line of text.split('\n')) {
    if (isBlank(line)) continue;
    for (const match of line.matchAll(WORD)) tokens.push(token(match[0]));
  }
  return tokens;
}

/** First pass: sentence-end marks, ellipses, known abbreviations, other period-final words. */
function firstPass(item: Token, punkt: Model): void {
  const { tok } = item;
  if (tok === '.' || tok === '?' || tok === '!') item.sentbreak = true;
  else if (ELLIPSIS.test(tok)) item.ellipsis = true;
  else if (item.periodFinal && !tok.endsWith('..')) {
    const stem = tok.slice(0, -1).toLowerCase();
    if (punkt.abbreviations.has(stem) || punkt.abbreviations.has(stem.split('-').at(-1)!)) {
      item.abbr = true;
    } else item.sentbreak = true;
  }
}

/** Whether `item` starts a sentence on orthographic evidence: true, false or 'unknown'. */
function orthoHeuristic(item: Token, punkt: Model): boolean | 'unknown' {
  if (PUNCTUATION.has(item.tok)) return false;
  const ortho = punkt.ortho.get(typeNoSentPeriod(item)) ?? 0;
  const first = firstChar(item.tok);
  const upper = /\p{Lu}/u.test(first);
  const lower = /\p{Ll}/u.test(first);
  if (upper && ortho & ORTHO_LC && !(ortho & ORTHO_MID_UC)) return true;
  if (lower && (ortho & ORTHO_UC || !(ortho & ORTHO_BEG_LC))) return false;
  return 'unknown';
}

/** Second pass on a pair of tokens: collocations, abbreviations and ellipses, initials, numbers. */
function secondPass(item: Token, next: Token, punkt: Model): void {
  if (!item.periodFinal) return;
  const type = typeNoPeriod(item);
  const nextType = typeNoSentPeriod(next);
  const initial = INITIAL.test(item.tok);
  if (punkt.collocations.has(`${type} ${nextType}`)) {
    item.sentbreak = false;
    item.abbr = true;
    return;
  }
  const nextUpper = /\p{Lu}/u.test(firstChar(next.tok));
  if ((item.abbr || item.ellipsis) && !initial) {
    if (orthoHeuristic(next, punkt) === true) {
      item.sentbreak = true;
      return;
    }
    if (nextUpper && punkt.starters.has(nextType)) {
      item.sentbreak = true;
      return;
    }
  }
  if (initial || type === '##number##') {
    const starter = orthoHeuristic(next, punkt);
    if (starter === false) {
      item.sentbreak = false;
      item.abbr = true;
      return;
    }
    if (
      starter === 'unknown' &&
      initial &&
      nextUpper &&
      !((punkt.ortho.get(nextType) ?? 0) & ORTHO_LC)
    ) {
      item.sentbreak = false;
      item.abbr = true;
    }
  }
}

/** True when a token other than the last of `context` ends a sentence. */
function containsBreak(context: string, punkt: Model): boolean {
  const tokens = words(context);
  for (const item of tokens) firstPass(item, punkt);
  for (let index = 0; index < tokens.length; index++) {
    const item = tokens[index]!;
    const next = tokens[index + 1];
    if (next) secondPass(item, next, punkt);
    if (item.sentbreak) return next !== undefined;
  }
  return false;
}

/** The last ASCII whitespace of `text` (Python's `string.whitespace`), or 0 when none. */
function lastWhitespace(text: string): number {
  for (let index = text.length - 1; index >= 0; index--) {
    if (' \t\n\r\v\f'.includes(text[index]!)) return index;
  }
  return 0;
}

/** The first code point of a token (Python's `tok[0]`). */
function firstChar(tok: string): string {
  const code = tok.codePointAt(0);
  return code === undefined ? '' : String.fromCodePoint(code);
}

type End = { end: number; nextStart: number | null; context: string };

/** NLTK's `_match_potential_end_contexts`: each candidate end with the word before it. */
function candidateEnds(text: string): End[] {
  const ends: End[] = [];
  let previous: { match: RegExpExecArray; start: number; stop: number } | null = null;
  let sliceStart = 0;
  let sliceStop = 0;
  const push = (item: { match: RegExpExecArray; start: number; stop: number }) => {
    const after = item.match[1]!;
    const next = item.match[2];
    ends.push({
      end: item.match.index + 1,
      nextStart: next === undefined ? null : item.match.index + 1 + after.length - next.length,
      context: text.slice(item.start, item.stop) + item.match[0] + after,
    });
  };
  PERIOD_CONTEXT.lastIndex = 0;
  for (let match = PERIOD_CONTEXT.exec(text); match; match = PERIOD_CONTEXT.exec(text)) {
    const before = text.slice(sliceStop, match.index);
    let start = lastWhitespace(before);
    // NLTK treats a space at the very start of the gap as no space at all
    start = start ? start + sliceStop + 1 : sliceStart;
    if (previous && sliceStop <= start) push(previous);
    previous = { match, start, stop: match.index };
    sliceStart = start;
    sliceStop = match.index;
  }
  if (previous) push(previous);
  return ends;
}

/** Sentence spans of `text` as `[start, end)` offsets, NLTK Punkt English. */
export function punktSpans(text: string): [number, number][] {
  const punkt = englishModel();
  const slices: [number, number][] = [];
  let lastBreak = 0;
  for (const candidate of candidateEnds(text)) {
    if (containsBreak(candidate.context, punkt)) {
      slices.push([lastBreak, candidate.end]);
      lastBreak = candidate.nextStart ?? candidate.end;
    }
  }
  slices.push([lastBreak, text.replace(TRAILING_SPACE, '').length]);
  const spans: [number, number][] = [];
  let realign = 0;
  for (let index = 0; index < slices.length; index++) {
    const [start, stop] = slices[index]!;
    const sentence: [number, number] = [start + realign, stop];
    const following = slices[index + 1];
    if (!following) {
      if (sentence[1] > sentence[0]) spans.push(sentence);
      continue;
    }
    REALIGNMENT.lastIndex = 0;
    const match = REALIGNMENT.exec(text.slice(following[0], following[1]));
    if (match) {
      spans.push([sentence[0], following[0] + match[0].trimEnd().length]);
      realign = match[0].length;
    } else {
      realign = 0;
      if (sentence[1] > sentence[0]) spans.push(sentence);
    }
  }
  return spans;
}

/** The sentences of `text` as NLTK's Punkt (English model) splits them. */
export function punktSentences(text: string): string[] {
  return punktSpans(text).map(([start, end]) => text.slice(start, end));
}
