/** Text measurements shared by the instruction checks (Unicode-aware, linear time). */

/** Count bounds: `min` and/or `max` (inclusive). `{ min: 3, max: 3 }` means exactly 3. */
export type CountBounds = { min?: number; max?: number };

const WORD = /[\p{L}\p{N}](?:[\p{L}\p{N}'’_-]|(?<=\p{N})[.,](?=\p{N}))*/gu;

/**
 * Words: maximal runs of letters/digits (with inner `'`, `’`, `_`, `-`, and `.`/`,` between digits,
 * so `3.14` and `1,000` are one word), Unicode-aware.
 */
export function countWords(text: string): number {
  let words = 0;
  for (const _ of text.matchAll(WORD)) words++;
  return words;
}

/**
 * Sentences: runs of `.`, `!` or `?` that follow a non-space character and are followed by
 * whitespace or the end (so `3.14` and `e.g.x` do not split), plus a final unterminated fragment
 * that contains a word.
 */
export function countSentences(text: string): number {
  let sentences = 0;
  let lastEnd = 0;
  for (const match of text.matchAll(/(?<=\S)[.!?]+(?=\s|$)/g)) {
    if (countWords(text.slice(lastEnd, match.index)) > 0) sentences++;
    lastEnd = match.index + match[0].length;
  }
  if (countWords(text.slice(lastEnd)) > 0) sentences++;
  return sentences;
}

/**
 * Paragraphs: non-blank blocks separated by blank lines, or by `***` divider lines. With dividers,
 * a blank block between two dividers is an empty paragraph: `emptyInside` counts them (IFEval fails
 * such a response; blank blocks before the first or after the last divider are ignored).
 */
export function paragraphBlocks(
  text: string,
  separator: 'blank-line' | 'divider',
): { paragraphs: number; emptyInside: number } {
  const blocks =
    separator === 'divider'
      ? text.split(/^[ \t]*\*\*\*+[ \t]*\r?$/m)
      : text.split(/\n[ \t]*(?:\r?\n[ \t]*)+/);
  const paragraphs = blocks.filter((block) => block.trim() !== '').length;
  const emptyInside =
    separator === 'divider' ? blocks.slice(1, -1).filter((block) => block.trim() === '').length : 0;
  return { paragraphs, emptyInside };
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Occurrences of `keyword` as a whole word/phrase (not inside a longer word). */
export function countKeyword(text: string, keyword: string, caseSensitive: boolean): number {
  const pattern = new RegExp(
    `(?<![\\p{L}\\p{N}_])${escapeRegExp(keyword)}(?![\\p{L}\\p{N}_])`,
    caseSensitive ? 'gu' : 'giu',
  );
  let found = 0;
  for (const _ of text.matchAll(pattern)) found++;
  return found;
}

/**
 * Placeholders: `[…]` on one line with non-blank content, except markdown links `[text](url)`,
 * images `![alt](src)` and task-list checkboxes (`- [ ]`, `- [x]` at the start of a list item).
 */
export function countPlaceholders(text: string): number {
  let found = 0;
  for (const match of text.matchAll(/\[([^[\]\n]*)\]/g)) {
    const content = match[1]!;
    if (content.trim() === '') continue;
    const end = match.index + match[0].length;
    if (text[end] === '(' || text[match.index - 1] === '!') continue;
    if (/^[xX]$/.test(content) && isTaskMarker(text, match.index)) continue;
    found++;
  }
  return found;
}

function isTaskMarker(text: string, start: number): boolean {
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  return /^[ \t]*(?:[-*+]|\d+[.)])[ \t]+$/.test(text.slice(lineStart, start));
}

/** Response split on `******` (IFEval's two-responses rule). `null` when a middle part is blank. */
export function twoResponseParts(text: string): string[] | null {
  const parts = text.split('******');
  const kept: string[] = [];
  for (const [index, part] of parts.entries()) {
    if (part.trim() !== '') kept.push(part);
    else if (index !== 0 && index !== parts.length - 1) return null;
  }
  return kept;
}

export function within(value: number, bounds: CountBounds): boolean {
  return (
    (bounds.min === undefined || value >= bounds.min) &&
    (bounds.max === undefined || value <= bounds.max)
  );
}

export function boundsText(bounds: CountBounds): string {
  if (bounds.min !== undefined && bounds.min === bounds.max) return `exactly ${bounds.min}`;
  const parts: string[] = [];
  if (bounds.min !== undefined) parts.push(`>= ${bounds.min}`);
  if (bounds.max !== undefined) parts.push(`<= ${bounds.max}`);
  return parts.join(' and ') || 'any number';
}
