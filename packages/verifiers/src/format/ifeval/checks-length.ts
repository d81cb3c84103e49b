import { validateInteger } from '@rlvr/core';
import { spec } from './checks-keywords.js';
import { compare, FUNCTION_NAME, readInteger, readRelation, readString } from './kwargs.js';
import { countSentences, countWordTokens, firstToken } from './text.js';

/** `length_constraints:number_sentences`: punkt-like sentence count compared to the threshold. */
export const numberSentences = spec({
  keys: ['num_sentences', 'relation'],
  read: (kwargs, parameter) => ({
    threshold: readInteger(kwargs.num_sentences, `${parameter}.num_sentences`),
    relation: readRelation(kwargs.relation, `${parameter}.relation`),
  }),
  check: (response, { threshold, relation }) =>
    compare(countSentences(response), relation, threshold),
});

/** `length_constraints:number_words`: `\w+` token count compared to the threshold. */
export const numberWords = spec({
  keys: ['num_words', 'relation'],
  read: (kwargs, parameter) => ({
    threshold: readInteger(kwargs.num_words, `${parameter}.num_words`),
    relation: readRelation(kwargs.relation, `${parameter}.relation`),
  }),
  check: (response, { threshold, relation }) =>
    compare(countWordTokens(response), relation, threshold),
});

/**
 * `length_constraints:number_paragraphs`: parts split on `***` (with one optional whitespace
 * character each side); blank first/last parts are dropped, a blank part in between fails; the
 * count must equal `num_paragraphs`.
 */
export const numberParagraphs = spec({
  keys: ['num_paragraphs'],
  read: (kwargs, parameter) => ({
    count: readInteger(kwargs.num_paragraphs, `${parameter}.num_paragraphs`, 1),
  }),
  check: (response, { count }) => {
    const parts = response.split(/\s?\*\*\*\s?/u);
    let paragraphs = parts.length;
    for (const [index, part] of parts.entries()) {
      if (part.trim() !== '') continue;
      if (index !== 0 && index !== parts.length - 1) return false;
      paragraphs--;
    }
    return paragraphs === count;
  },
});

const FIRST_WORD_STOP = new Set(['.', ',', '?', '!', "'", '"']);

/**
 * `length_constraints:nth_paragraph_first_word`: paragraphs split on `\n\n`; the non-blank count
 * must equal `num_paragraphs`, and the `nth_paragraph`-th part (1-based, counting blank parts) must
 * be non-blank and its first word, lower-cased up to the first `. , ? ! ' "`, equal `first_word`.
 */
export const nthParagraphFirstWord = spec({
  keys: ['num_paragraphs', 'nth_paragraph', 'first_word'],
  read: (kwargs, parameter) => {
    const count = readInteger(kwargs.num_paragraphs, `${parameter}.num_paragraphs`, 1);
    return {
      count,
      nth: validateInteger(kwargs.nth_paragraph, {
        parameter: `${parameter}.nth_paragraph`,
        functionName: FUNCTION_NAME,
        min: 1,
        max: count,
      }),
      firstWord: readString(kwargs.first_word, `${parameter}.first_word`).toLowerCase(),
    };
  },
  check: (response, { count, nth, firstWord }) => {
    const parts = response.split('\n\n');
    const paragraphs = parts.filter((part) => part.trim() !== '').length;
    if (nth > paragraphs) return false;
    const paragraph = parts[nth - 1]!.trim();
    if (paragraph === '') return false;
    let word = '';
    for (const char of firstToken(paragraph).replace(/^'+/u, '').replace(/^"+/u, '')) {
      if (FIRST_WORD_STOP.has(char) || word.length > firstWord.length) break;
      word += char.toLowerCase();
    }
    return paragraphs === count && word === firstWord;
  },
});
