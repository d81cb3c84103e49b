import { InvalidArgumentError } from '@rlvr/core';
import {
  type CheckContext,
  compare,
  countMatches,
  escapeRegExp,
  FUNCTION_NAME,
  readInteger,
  readRelation,
  readString,
  readStringList,
} from './kwargs.js';
import { WORD_BOUNDARY } from './text.js';

/** One IFEval instruction: its kwargs' keys, how to read them, and how to check a response. */
export type InstructionSpec<K> = {
  keys: readonly string[];
  read(kwargs: Record<string, unknown>, parameter: string): K;
  check(response: string, kwargs: K, context: CheckContext): boolean;
  /** True when the check needs the language detector. */
  language?: boolean;
};

export function spec<K>(value: InstructionSpec<K>): InstructionSpec<K> {
  return value;
}

/** `keywords:existence`: every keyword occurs, case-insensitive, anywhere (a plain substring). */
export const existence = spec({
  keys: ['keywords'],
  read: (kwargs, parameter) => ({
    keywords: readStringList(kwargs.keywords, `${parameter}.keywords`),
  }),
  check: (response, { keywords }) =>
    keywords.every((keyword) => new RegExp(escapeRegExp(keyword), 'iu').test(response)),
});

/** `keywords:frequency`: case-insensitive non-overlapping occurrences compared to `frequency`. */
export const frequency = spec({
  keys: ['keyword', 'frequency', 'relation'],
  read: (kwargs, parameter) => ({
    keyword: readString(kwargs.keyword, `${parameter}.keyword`),
    frequency: readInteger(kwargs.frequency, `${parameter}.frequency`),
    relation: readRelation(kwargs.relation, `${parameter}.relation`),
  }),
  check: (response, { keyword, frequency: threshold, relation }) =>
    compare(countMatches(response, new RegExp(escapeRegExp(keyword), 'giu')), relation, threshold),
});

/** `keywords:forbidden_words`: no word occurs between word boundaries, case-insensitive. */
export const forbiddenWords = spec({
  keys: ['forbidden_words'],
  read: (kwargs, parameter) => ({
    words: readStringList(kwargs.forbidden_words, `${parameter}.forbidden_words`),
  }),
  check: (response, { words }) =>
    !words.some((word) =>
      new RegExp(`${WORD_BOUNDARY}${escapeRegExp(word)}${WORD_BOUNDARY}`, 'iu').test(response),
    ),
});

/** `keywords:letter_frequency`: count of one character in the lower-cased response. */
export const letterFrequency = spec({
  keys: ['letter', 'let_frequency', 'let_relation'],
  read: (kwargs, parameter) => {
    const letter = readString(kwargs.letter, `${parameter}.letter`);
    if ([...letter].length !== 1) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.letter`,
        functionName: FUNCTION_NAME,
        value: kwargs.letter,
        expected: 'one character',
      });
    }
    return {
      letter: letter.toLowerCase(),
      frequency: readInteger(kwargs.let_frequency, `${parameter}.let_frequency`),
      relation: readRelation(kwargs.let_relation, `${parameter}.let_relation`),
    };
  },
  check: (response, { letter, frequency: threshold, relation }) => {
    let count = 0;
    for (const char of response.toLowerCase()) if (char === letter) count++;
    return compare(count, relation, threshold);
  },
});
