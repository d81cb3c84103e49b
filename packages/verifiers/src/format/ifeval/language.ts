import { readFile } from 'node:fs/promises';
import { ErrorCode, RlvrError } from '@rlvr/core';
import { dataFile } from '../../data-files.js';
import { buildModel, detectLanguage, type Profiles } from './langdetect.js';

/**
 * Names the language of a text as langdetect does (`'en'`, `'hi'`, …, ISO 639-1 codes and `zh-cn`,
 * `zh-tw`), or `null` when the text has nothing to go by (langdetect raises "No features in
 * text": no letters it knows).
 */
export type LanguageDetector = {
  detect(text: string): string | null;
  /** The ISO 639-1 codes it can name. */
  readonly languages: readonly string[];
};

/**
 * IFEval's response languages (ISO 639-1, `instructions_util.LANGUAGE_CODES`): the codes
 * `language:response_language` uses.
 */
export const IFEVAL_LANGUAGES: Readonly<Record<string, string>> = {
  en: 'English',
  es: 'Spanish',
  pt: 'Portuguese',
  ar: 'Arabic',
  hi: 'Hindi',
  fr: 'French',
  ru: 'Russian',
  de: 'German',
  ja: 'Japanese',
  it: 'Italian',
  bn: 'Bengali',
  uk: 'Ukrainian',
  th: 'Thai',
  ur: 'Urdu',
  ta: 'Tamil',
  te: 'Telugu',
  bg: 'Bulgarian',
  ko: 'Korean',
  pl: 'Polish',
  he: 'Hebrew',
  fa: 'Persian',
  vi: 'Vietnamese',
  ne: 'Nepali',
  sw: 'Swahili',
  kn: 'Kannada',
  mr: 'Marathi',
  gu: 'Gujarati',
  pa: 'Punjabi',
  ml: 'Malayalam',
  fi: 'Finnish',
};

/** langdetect's 55 languages (its codes: ISO 639-1, and `zh-cn`, `zh-tw`). */
// biome-ignore format: a table
export const DETECTABLE_LANGUAGES: readonly string[] = [
  'af', 'ar', 'bg', 'bn', 'ca', 'cs', 'cy', 'da', 'de', 'el', 'en', 'es', 'et', 'fa', 'fi', 'fr',
  'gu', 'he', 'hi', 'hr', 'hu', 'id', 'it', 'ja', 'kn', 'ko', 'lt', 'lv', 'mk', 'ml', 'mr', 'ne',
  'nl', 'no', 'pa', 'pl', 'pt', 'ro', 'ru', 'sk', 'sl', 'so', 'sq', 'sv', 'sw', 'ta', 'te', 'th',
  'tl', 'tr', 'uk', 'ur', 'vi', 'zh-cn', 'zh-tw',
];

let detectorPromise: Promise<LanguageDetector> | undefined;

/**
 * Loads the language detector once (lazily: importing this package loads nothing). It is
 * langdetect's model — the library IFEval's `language:response_language`,
 * `change_case:english_capital` and `change_case:english_lowercase` call — computed
 * deterministically (`langdetect.ts`), from langdetect 1.0.9's profiles (`data/langdetect-profiles.json`,
 * 2.3 MB, read here).
 *
 * @throws {RlvrError} `UNAVAILABLE` when the profiles cannot be loaded.
 */
export function loadLanguageDetector(): Promise<LanguageDetector> {
  detectorPromise ??= Promise.resolve()
    .then(() => readFile(dataFile('langdetect-profiles.json'), 'utf8'))
    .then(
      (text) => {
        const model = buildModel(JSON.parse(text) as Profiles);
        return { languages: DETECTABLE_LANGUAGES, detect: (input) => detectLanguage(input, model) };
      },
      (error: unknown) => {
        detectorPromise = undefined;
        throw new RlvrError(ErrorCode.UNAVAILABLE, "langdetect's profiles could not be loaded", {
          cause: error,
        });
      },
    );
  return detectorPromise;
}
