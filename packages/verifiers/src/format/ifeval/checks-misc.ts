import { InvalidArgumentError } from '@rlvr/core';
import { twoResponseParts } from '../text-measures.js';
import { spec } from './checks-keywords.js';
import {
  type CheckContext,
  compare,
  FUNCTION_NAME,
  readInteger,
  readRelation,
  readString,
} from './kwargs.js';
import { DETECTABLE_LANGUAGES, IFEVAL_LANGUAGES } from './language.js';
import { countCapitalWords, isLower, isUpper, stripChars } from './text.js';

/**
 * The detected language of `text`, or what IFEval does when there is none: langdetect raises and
 * IFEval counts the instruction as followed (`'official'`); `'hardened'` counts it as not followed.
 */
function languageIs(text: string, code: string, context: CheckContext): boolean {
  if (context.detector === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options.detector',
      functionName: FUNCTION_NAME,
      value: undefined,
      expected: 'a LanguageDetector for language instructions (await loadLanguageDetector())',
    });
  }
  const detected = context.detector.detect(text);
  if (detected === null) return context.semantics === 'official';
  return detected === code;
}

/** `language:response_language`: the detected language is `language` (ISO 639-1). */
export const responseLanguage = spec({
  keys: ['language'],
  language: true,
  read: (kwargs, parameter) => {
    const language = readString(kwargs.language, `${parameter}.language`);
    if (!(language in IFEVAL_LANGUAGES) && !DETECTABLE_LANGUAGES.includes(language)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.language`,
        functionName: FUNCTION_NAME,
        value: kwargs.language,
        expected: `an ISO 639-1 code the detector knows (${DETECTABLE_LANGUAGES.join(', ')})`,
      });
    }
    return { language };
  },
  check: (response, { language }, context) => languageIs(response, language, context),
});

/** `change_case:english_capital`: Python `isupper()` and detected as English. */
export const englishCapital = spec({
  keys: [],
  language: true,
  read: () => ({}),
  check: (response, _kwargs, context) => isUpper(response) && languageIs(response, 'en', context),
});

/** `change_case:english_lowercase`: Python `islower()` and detected as English. */
export const englishLowercase = spec({
  keys: [],
  language: true,
  read: () => ({}),
  check: (response, _kwargs, context) => isLower(response) && languageIs(response, 'en', context),
});

/** `change_case:capital_word_frequency`: Treebank tokens that are `isupper()`, compared. */
export const capitalWordFrequency = spec({
  keys: ['capital_frequency', 'capital_relation'],
  read: (kwargs, parameter) => ({
    threshold: readInteger(kwargs.capital_frequency, `${parameter}.capital_frequency`),
    relation: readRelation(kwargs.capital_relation, `${parameter}.capital_relation`),
  }),
  check: (response, { threshold, relation }) =>
    compare(countCapitalWords(response), relation, threshold),
});

/** `punctuation:no_comma`: no `,`. */
export const noComma = spec({
  keys: [],
  read: () => ({}),
  check: (response) => !response.includes(','),
});

/** `combination:two_responses`: two non-blank, different parts around `******`. */
export const twoResponses = spec({
  keys: [],
  read: () => ({}),
  check: (response) => {
    const parts = twoResponseParts(response);
    return parts !== null && parts.length === 2 && parts[0]!.trim() !== parts[1]!.trim();
  },
});

/** `combination:repeat_prompt`: starts with `prompt_to_repeat`, both stripped, case-insensitive. */
export const repeatPrompt = spec({
  keys: ['prompt_to_repeat'],
  read: (kwargs, parameter) => ({
    prompt: readString(kwargs.prompt_to_repeat, `${parameter}.prompt_to_repeat`).toLowerCase(),
  }),
  check: (response, { prompt }) => response.trim().toLowerCase().startsWith(prompt),
});

/** `startend:end_checker`: stripped of whitespace then `"`, ends with `end_phrase` (any case). */
export const endChecker = spec({
  keys: ['end_phrase'],
  read: (kwargs, parameter) => ({
    phrase: readString(kwargs.end_phrase, `${parameter}.end_phrase`).toLowerCase(),
  }),
  check: (response, { phrase }) => stripChars(response.trim(), '"').toLowerCase().endsWith(phrase),
});

/**
 * `startend:quotation`: the stripped response is longer than one character and starts and ends
 * with `"`. Hardened: something non-blank is inside the quotes (`""` is not a quotation).
 */
export const quotation = spec({
  keys: [],
  read: () => ({}),
  check: (response, _kwargs, { semantics }) => {
    const value = response.trim();
    const wrapped = value.length > 1 && value.startsWith('"') && value.endsWith('"');
    return wrapped && (semantics === 'official' || value.slice(1, -1).trim() !== '');
  },
});
