import { ErrorCode, RlvrError } from '@rlvr/core';

/**
 * Names the language of a text as an ISO 639-1 code (`'en'`, `'hi'`, …), or `null` when the text
 * has nothing to go by (no letters, or too little text).
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

/** eld's 60 languages (ISO 639-1). */
// biome-ignore format: a table
const ELD_LANGUAGES = [
  'am', 'ar', 'az', 'be', 'bg', 'bn', 'ca', 'cs', 'da', 'de', 'el', 'en', 'es', 'et', 'eu', 'fa',
  'fi', 'fr', 'gu', 'he', 'hi', 'hr', 'hu', 'hy', 'is', 'it', 'ja', 'ka', 'kn', 'ko', 'ku', 'lo',
  'lt', 'lv', 'ml', 'mr', 'ms', 'nl', 'no', 'or', 'pa', 'pl', 'pt', 'ro', 'ru', 'sk', 'sl', 'sq',
  'sr', 'sv', 'ta', 'te', 'th', 'tl', 'tr', 'uk', 'ur', 'vi', 'yo', 'zh',
] as const;

/**
 * franc's ISO 639-3 code for the eld guesses it can tell apart from Nepali (Devanagari) or
 * Swahili (Latin script). eld knows neither Nepali nor Swahili, so franc decides between eld's
 * guess and the one of them that shares its script.
 */
const DEVANAGARI_RIVALS: Readonly<Record<string, string>> = { hi: 'hin', mr: 'mar' };
// biome-ignore format: a table
const LATIN_RIVALS: Readonly<Record<string, string>> = {
  az: 'azj', ca: 'cat', cs: 'ces', da: 'dan', de: 'deu', en: 'eng', es: 'spa', fi: 'fin',
  fr: 'fra', hr: 'hrv', hu: 'hun', it: 'ita', lt: 'lit', lv: 'lvs', ms: 'zlm', nl: 'nld',
  no: 'nob', pl: 'pol', pt: 'por', ro: 'ron', sk: 'slk', sl: 'slv', sq: 'als', sv: 'swe',
  tl: 'tgl', tr: 'tur', vi: 'vie', yo: 'yor',
};

/** Every code the detector can name: eld's 60 plus Nepali and Swahili. */
export const DETECTABLE_LANGUAGES: readonly string[] = [...ELD_LANGUAGES, 'ne', 'sw'].sort();

type Eld = { detect(text: string): { language: string } };
type Franc = (text: string, options: { only: string[] }) => string;

/** Builds the detector from the two libraries (exported for tests that stub them). */
export function createLanguageDetector(eld: Eld, franc: Franc): LanguageDetector {
  const pick = (text: string, guess: string, rival: string, other: string, code: string) =>
    franc(text, { only: [rival, other] }) === other ? code : guess;
  return {
    languages: DETECTABLE_LANGUAGES,
    detect(text) {
      const guess = eld.detect(text).language;
      if (guess === '') return null;
      const devanagari = DEVANAGARI_RIVALS[guess];
      if (devanagari !== undefined) return pick(text, guess, devanagari, 'npi', 'ne');
      const latin = LATIN_RIVALS[guess];
      if (latin !== undefined) return pick(text, guess, latin, 'swh', 'sw');
      return guess;
    },
  };
}

let detectorPromise: Promise<LanguageDetector> | undefined;

/**
 * Loads the language detector once (lazily: importing this package loads nothing). It is
 * [eld](https://www.npmjs.com/package/eld) (Nito-ELD, extra-small database: 60 languages, about
 * 37 MB of memory) with [franc](https://www.npmjs.com/package/franc) deciding Nepali against
 * Hindi/Marathi and Swahili against eld's Latin-script guess, the two IFEval languages eld lacks.
 *
 * @throws {RlvrError} `UNAVAILABLE` when the libraries cannot be loaded.
 */
export function loadLanguageDetector(): Promise<LanguageDetector> {
  detectorPromise ??= Promise.all([import('eld/extrasmall'), import('franc')]).then(
    ([eldModule, francModule]) =>
      createLanguageDetector(eldModule.eld as Eld, francModule.franc as unknown as Franc),
    (error: unknown) => {
      detectorPromise = undefined;
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        'the language detector (eld, franc) could not be loaded',
        { cause: error },
      );
    },
  );
  return detectorPromise;
}
