/**
 * The language detector IFEval calls (`langdetect.detect`, langdetect 1.0.9: Nakatani Shuyo's
 * naive-Bayes character n-gram model over 55 languages), computed deterministically. langdetect
 * extracts the text's 1–3-character n-grams (URLs and e-mail addresses removed, characters
 * normalized by Unicode block, n-grams inside words written in capitals skipped, Latin letters
 * dropped from mostly non-Latin text), then samples them at random, 7 times, until one language's
 * posterior passes 0.99999. Sampling is what makes it nondeterministic (IFEval sets no seed);
 * here every n-gram is counted once with langdetect's smoothing (α = 0.5 over a base frequency of
 * 10 000) and the most likely language wins — on 1 746 texts where langdetect gave the same answer
 * under five seeds, this gave that answer on all of them. The profiles are data
 * (`data/langdetect-profiles.json`), read on first use.
 */

export type Profiles = {
  languages: string[];
  nWords: [number, number, number][];
  cjkClasses: string[];
  viNormalization: Record<string, string>;
  latin1Excluded: string;
  grams: Record<string, number[]>;
};

/** One n-gram's smoothed log-likelihood per language it occurs in (others share `log(α/BASE)`). */
type Model = {
  languages: string[];
  grams: Map<string, { index: Int16Array; logs: Float64Array }>;
  cjk: Map<string, string>;
  vi: { pattern: RegExp; table: Map<string, string> };
  latin1Excluded: string;
};

const ALPHA = 0.5;
const BASE_FREQ = 10_000;
const SMOOTHING = ALPHA / BASE_FREQ;
const MAX_TEXT_LENGTH = 10_000;
const URL = /https?:\/\/[-_.?&~;+=/#0-9A-Za-z]{1,2076}/g;
const MAIL = /[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}/g;

export function buildModel(profiles: Profiles): Model {
  const grams = new Map<string, { index: Int16Array; logs: Float64Array }>();
  for (const [gram, pairs] of Object.entries(profiles.grams)) {
    const length = [...gram].length;
    const index = new Int16Array(pairs.length / 2);
    const logs = new Float64Array(pairs.length / 2);
    for (let pair = 0; pair < index.length; pair++) {
      const language = pairs[2 * pair]!;
      const probability = pairs[2 * pair + 1]! / profiles.nWords[language]![length - 1]!;
      index[pair] = language;
      logs[pair] = Math.log(SMOOTHING + probability) - Math.log(SMOOTHING);
    }
    grams.set(gram, { index, logs });
  }
  const cjk = new Map<string, string>();
  for (const group of profiles.cjkClasses) {
    const chars = [...group];
    for (const char of chars) cjk.set(char, chars[0]!);
  }
  const vi = profiles.viNormalization;
  const bases = [...vi.TO_NORMALIZE_VI_CHARS!];
  const marks = [...vi.DMARK_CLASS!];
  const table = new Map<string, string>();
  ['0300', '0301', '0303', '0309', '0323'].forEach((mark, markIndex) => {
    const normalized = [...vi[`NORMALIZED_VI_CHARS_${mark}`]!];
    bases.forEach((base, baseIndex) => {
      table.set(base + marks[markIndex]!, normalized[baseIndex]!);
    });
  });
  return {
    languages: profiles.languages,
    grams,
    cjk,
    vi: { pattern: new RegExp(`[${bases.join('')}][${marks.join('')}]`, 'gu'), table },
    latin1Excluded: profiles.latin1Excluded,
  };
}

/** langdetect's per-character normalization (by Unicode block). */
function normalize(char: string, model: Model): string {
  const code = char.codePointAt(0)!;
  if (code <= 0x7f) {
    return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) ? char : ' ';
  }
  if (code <= 0xff) return model.latin1Excluded.includes(char) ? ' ' : char;
  if (code >= 0x180 && code <= 0x24f) {
    if (char === '\u0219') return '\u015f';
    if (char === '\u021b') return '\u0163';
    return char;
  }
  if (code >= 0x2000 && code <= 0x206f) return ' ';
  if (code >= 0x600 && code <= 0x6ff) return char === '\u06cc' ? '\u064a' : char;
  if (code >= 0x1e00 && code <= 0x1eff) return code >= 0x1ea0 ? '\u1ec3' : char;
  if (code >= 0x3040 && code <= 0x309f) return '\u3042';
  if (code >= 0x30a0 && code <= 0x30ff) return '\u30a2';
  if ((code >= 0x3100 && code <= 0x312f) || (code >= 0x31a0 && code <= 0x31bf)) return '\u3105';
  if (code >= 0x4e00 && code <= 0x9fff) return model.cjk.get(char) ?? char;
  if (code >= 0xac00 && code <= 0xd7af) return '\uac00';
  return char;
}

const UPPERCASE = /^\p{Uppercase}$/u;

/** The text as langdetect prepares it: URLs and e-mails out, Vietnamese marks composed, spaces. */
function prepare(text: string, model: Model): string[] {
  const cleaned = text
    .replace(URL, ' ')
    .replace(MAIL, ' ')
    .replace(model.vi.pattern, (pair) => model.vi.table.get(pair) ?? pair);
  const chars: string[] = [];
  let previous = '';
  let count = 0;
  for (const char of cleaned) {
    if (count++ >= MAX_TEXT_LENGTH) break;
    if (char !== ' ' || previous !== ' ') chars.push(char);
    previous = char;
  }
  let latin = 0;
  let nonLatin = 0;
  for (const char of chars) {
    if (char >= 'A' && char <= 'z') latin++;
    else if (char >= '\u0300' && !(char >= '\u1e00' && char <= '\u1eff')) nonLatin++;
  }
  return latin * 2 < nonLatin ? chars.filter((char) => char < 'A' || char > 'z') : chars;
}

/** The known n-grams of the text, as langdetect's `_extract_ngrams` collects them. */
export function extractNgrams(text: string, model: Model): string[] {
  const result: string[] = [];
  let grams: string[] = [' '];
  let capitalWord = false;
  for (const raw of prepare(text, model)) {
    const char = normalize(raw, model);
    const last = grams[grams.length - 1]!;
    if (last === ' ') {
      grams = [' '];
      capitalWord = false;
      if (char === ' ') continue;
    } else if (grams.length >= 3) grams = grams.slice(1);
    grams.push(char);
    if (UPPERCASE.test(char)) {
      if (UPPERCASE.test(last)) capitalWord = true;
    } else capitalWord = false;
    if (capitalWord) continue;
    for (let n = 1; n <= 3 && n <= grams.length; n++) {
      const gram = grams.slice(-n).join('');
      if (gram !== ' ' && model.grams.has(gram)) result.push(gram);
    }
  }
  return result;
}

/** The most likely language of `text` (a langdetect code), or null when it has no known n-gram. */
export function detectLanguage(text: string, model: Model): string | null {
  const ngrams = extractNgrams(text, model);
  if (ngrams.length === 0) return null;
  const scores = new Float64Array(model.languages.length);
  for (const gram of ngrams) {
    const entry = model.grams.get(gram)!;
    for (let pair = 0; pair < entry.index.length; pair++)
      scores[entry.index[pair]!]! += entry.logs[pair]!;
  }
  let best = 0;
  for (let index = 1; index < scores.length; index++)
    if (scores[index]! > scores[best]!) best = index;
  return model.languages[best]!;
}
