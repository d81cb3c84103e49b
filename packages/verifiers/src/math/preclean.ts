/**
 * String-level clean-up of one extracted answer before it is converted (`latex.ts`): math
 * delimiters, currency signs, thousands separators in every LaTeX form, spacing commands and
 * punctuation around the value, "number + words" (`72 clips`), and mixed numbers (`4 4/9`). Internal.
 */

/** Every comma is a thousands separator (`1,000,000`, but not `1, 2` or `1,2`). */
const THOUSANDS_ONLY = /^[^,]*?(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d.])[^,]*$/;

/**
 * A thousands separator written with LaTeX spacing or grouping, or a Unicode space, between digit
 * groups: `10,\!000` (also `10,\! 000`), `10{,}000` (`14 {, }916`), `10\,000`, `10\;000`, `10\ 000`, `10\!000`,
 * thin/no-break spaces.
 * The next group must be exactly three digits.
 */
export const LATEX_THOUSANDS =
  /(\d)(?:,\\!\s*|\s*\{\s*,\s*\}\s*|\\[,;: !]|[\u00a0\u2009\u202f])(?=\d{3}(?!\d))/g;

/** A plain-space grouped number (`1 000 000`, `-25 000.5`) that is a whole list item. */
const SPACE_GROUPED = /^([-+]?)(\d{1,3}(?: \d{3})+)(\.\d+)?(?=$|\s+[A-Za-z\\])/;

/** A mixed number `4 4/9` (a proper fraction after a space) that is a whole list item. */
const MIXED_NUMBER = /^([-+]?\d+) +(\d+) *\/ *(\d+)(?=$|\s+[A-Za-z\\])/;

const CURRENCY = /\\\$|\$|\\text(?:dollar|sterling|euro|yen)\b|\\(?:euro|pounds|yen)\b|[€£¥₹]/g;

const SPACING = String.raw`\\[,;:! ]|\\q?quad\b|~|\\[hv]space\*?\{[^{}]*\}`;
const LEADING = new RegExp(String.raw`^(?:${SPACING}|\\(?:display|text)style\b|\s)+`);
const TRAILING = new RegExp(String.raw`(?:${SPACING}|\\\\|\\text\{\s*[.,;:!?]?\s*\}|[.,;:?\s])+$`);

const VULGAR: Readonly<Record<string, string>> = {
  '½': '\\frac{1}{2}',
  '⅓': '\\frac{1}{3}',
  '⅔': '\\frac{2}{3}',
  '¼': '\\frac{1}{4}',
  '¾': '\\frac{3}{4}',
  '⅕': '\\frac{1}{5}',
  '⅖': '\\frac{2}{5}',
  '⅗': '\\frac{3}{5}',
  '⅘': '\\frac{4}{5}',
  '⅙': '\\frac{1}{6}',
  '⅚': '\\frac{5}{6}',
  '⅛': '\\frac{1}{8}',
  '⅜': '\\frac{3}{8}',
  '⅝': '\\frac{5}{8}',
  '⅞': '\\frac{7}{8}',
};
const VULGAR_CHARS = /[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞]/g;
const HAS_VULGAR = /[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞]/;

/** Splits at top-level commas (outside brackets and braces) keeping the separators' text. */
function topLevelItems(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (char === '\\') {
      index++;
      continue;
    }
    if (char === '(' || char === '[' || char === '{') depth++;
    else if (char === ')' || char === ']' || char === '}') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** `1 000 000` → `1000000` and `4 4/9` → `4\frac{4}{9}` where one is a whole list item. */
function rewriteItem(item: string): string {
  const lead = /^\s*/.exec(item)![0];
  const body = item.slice(lead.length);
  const grouped = SPACE_GROUPED.exec(body);
  if (grouped) {
    const [whole, sign = '', digits = '', fraction = ''] = grouped;
    return `${lead}${sign}${digits.replace(/ /g, '')}${fraction}${body.slice(whole.length)}`;
  }
  const mixed = MIXED_NUMBER.exec(body);
  if (mixed) {
    const [whole, integer = '', numerator = '', denominator = ''] = mixed;
    const n = Number(numerator);
    if (n > 0 && n < Number(denominator)) {
      return `${lead}${integer}\\frac{${numerator}}{${denominator}}${body.slice(whole.length)}`;
    }
  }
  return item;
}

/** Removes spacing commands and punctuation around the value (`\,5\,.` → `5`). */
function trimAround(text: string): string {
  let current = text.trim();
  for (let guard = 0; guard < 4; guard++) {
    const next = current
      .replace(/^\*\*|\*\*$/g, '')
      .replace(LEADING, '')
      .replace(TRAILING, '')
      .trim();
    if (next === current) break;
    current = next;
  }
  return current;
}

/**
 * String-level clean-up applied before conversion: math delimiters, `\left.`, currency signs,
 * thousands separators (LaTeX forms, Unicode spaces, commas when every comma is one, plain spaces
 * when the group is a whole item), spacing and trailing punctuation, "number + words" (`72 clips` →
 * `72`), mixed numbers (`4 4/9`) and vulgar fractions (`3½`).
 */
export function precleanAnswer(raw: string): string {
  let text = raw.trim();
  // Math delimiters and display wrappers.
  text = text.replace(/^\$+|\$+$/g, '').trim();
  if (text.startsWith('\\(') && text.endsWith('\\)')) text = text.slice(2, -2).trim();
  if (text.startsWith('\\[') && text.endsWith('\\]')) text = text.slice(2, -2).trim();
  text = text.replace(/\\left\.|\\right\./g, '');
  text = text.replace(CURRENCY, '');
  text = text.replace(LATEX_THOUSANDS, '$1');
  if (HAS_VULGAR.test(text)) text = text.replace(VULGAR_CHARS, (char) => VULGAR[char]!);
  text = trimAround(text);
  if (/[^\d)!\\]!$/.test(text)) text = text.slice(0, -1).trim();
  // Comma thousands separators, only when every comma is one (1,000,000 but not 1, 2).
  if (THOUSANDS_ONLY.test(text) && !/^[([{]|\\\{/.test(text)) {
    text = text.replace(/(\d),(?=\d{3}(?!\d))/g, '$1');
  }
  if (/\d \d/.test(text)) text = topLevelItems(text).map(rewriteItem).join(',');
  // "72 clips", "$18 dollars", "4\frac{4}{9} pounds" → the number.
  const numberWords =
    /^([-+]?\d+(?:\.\d+)?(?:\\frac\{\d+\}\{\d+\})?)\s+(?:[A-Za-z]{2,}[A-Za-z'-]*\s*)+$/.exec(text);
  if (numberWords) text = numberWords[1]!;
  return text;
}
