import { countPlaceholders } from '../text-measures.js';
import { spec } from './checks-keywords.js';
import { countMatches, escapeRegExp, readInteger, readString } from './kwargs.js';
import { stripChars } from './text.js';

/**
 * `detectable_content:number_placeholders`: at least `num_placeholders` matches of `\[.*?\]`.
 * Hardened: only those with non-blank content that are not a markdown link, image or checkbox.
 */
export const numberPlaceholders = spec({
  keys: ['num_placeholders'],
  read: (kwargs, parameter) => ({
    count: readInteger(kwargs.num_placeholders, `${parameter}.num_placeholders`),
  }),
  check: (response, { count }, { semantics }) =>
    (semantics === 'official' ? countBracketed(response) : countPlaceholders(response)) >= count,
});

/** IFEval's `re.findall(r"\[.*?\]")` count, in linear time: `[` to the next `]` on its line. */
function countBracketed(text: string): number {
  let count = 0;
  for (const line of text.split('\n')) {
    let from = 0;
    for (;;) {
      const open = line.indexOf('[', from);
      if (open < 0) break;
      const close = line.indexOf(']', open + 1);
      if (close < 0) break;
      count++;
      from = close + 1;
    }
  }
  return count;
}

/**
 * `detectable_content:postscript`: the lower-cased response contains the lower-cased marker
 * anywhere (`P.S.` also as `p. s.`, `P.P.S` also as `p. p. s`), as IFEval's unanchored search.
 */
export const postscript = spec({
  keys: ['postscript_marker'],
  read: (kwargs, parameter) => ({
    marker: readString(kwargs.postscript_marker, `${parameter}.postscript_marker`),
  }),
  check: (response, { marker }) => {
    const pattern =
      marker === 'P.P.S'
        ? /p\.\s?p\.\s?s/u
        : marker === 'P.S.'
          ? /p\.\s?s\./u
          : new RegExp(escapeRegExp(marker.toLowerCase()), 'u');
    return pattern.test(response.toLowerCase());
  },
});

/** `detectable_format:number_bullet_lists`: lines starting `* ` (not `**`) or `-`, exactly N. */
export const numberBulletLists = spec({
  keys: ['num_bullets'],
  read: (kwargs, parameter) => ({
    count: readInteger(kwargs.num_bullets, `${parameter}.num_bullets`),
  }),
  check: (response, { count }) =>
    countMatches(response, /(?:^|(?<=\n))[^\S\n]*\*[^*][^\n]*/gu) +
      countMatches(response, /(?:^|(?<=\n))[^\S\n]*-[^\n]*/gu) ===
    count,
});

const CONSTRAINED = ['My answer is yes.', 'My answer is no.', 'My answer is maybe.'];

/** `detectable_format:constrained_response`: contains one of IFEval's three answer sentences. */
export const constrainedResponse = spec({
  keys: [],
  read: () => ({}),
  check: (response) => CONSTRAINED.some((option) => response.trim().includes(option)),
});

/** `detectable_format:number_highlighted_sections`: `*text*` and `**text**` with non-blank text. */
export const numberHighlightedSections = spec({
  keys: ['num_highlights'],
  read: (kwargs, parameter) => ({
    count: readInteger(kwargs.num_highlights, `${parameter}.num_highlights`),
  }),
  check: (response, { count }) => {
    let highlights = 0;
    for (const match of response.matchAll(/\*[^\n*]*\*/gu)) {
      if (stripChars(match[0], '*').trim() !== '') highlights++;
    }
    for (const match of response.matchAll(/\*\*[^\n*]*\*\*/gu)) {
      if (match[0].slice(2, -2).trim() !== '') highlights++;
    }
    return highlights >= count;
  },
});

/**
 * `detectable_format:multiple_sections`: splitting on `\s?SPLITTER\s?\d+\s?` (case-sensitive, as
 * given: `Section` does not match `SECTION`) gives at least `num_sections` sections.
 */
export const multipleSections = spec({
  keys: ['section_spliter', 'num_sections'],
  read: (kwargs, parameter) => ({
    splitter: readString(kwargs.section_spliter, `${parameter}.section_spliter`),
    count: readInteger(kwargs.num_sections, `${parameter}.num_sections`),
  }),
  check: (response, { splitter, count }) =>
    countMatches(response, new RegExp(`\\s?${escapeRegExp(splitter)}\\s?\\p{Nd}+\\s?`, 'gu')) >=
    count,
});

/** `detectable_format:json_format`: without a ```json / ``` fence, the stripped text parses. */
export const jsonFormat = spec({
  keys: [],
  read: () => ({}),
  check: (response) => {
    let value = response.trim();
    for (const prefix of ['```json', '```Json', '```JSON', '```']) {
      if (value.startsWith(prefix)) value = value.slice(prefix.length);
    }
    if (value.endsWith('```')) value = value.slice(0, -3);
    try {
      JSON.parse(value.trim());
      return true;
    } catch {
      return false;
    }
  },
});

/** `detectable_format:title`: a `<<…>>` on one line whose text (without `<` `>`) is not blank. */
export const title = spec({
  keys: [],
  read: () => ({}),
  check: (response) =>
    response.split('\n').some((line) => {
      // IFEval's greedy `<<[^\n]+>>`: from the first `<<` to the last `>>` of the line.
      const start = line.indexOf('<<');
      const end = line.lastIndexOf('>>');
      if (start < 0 || end < start + 3) return false;
      return (
        line
          .slice(start, end + 2)
          .replace(/^<+/u, '')
          .replace(/>+$/u, '')
          .trim() !== ''
      );
    }),
});
