import { closestOption, ErrorCode, InvalidArgumentError } from '@rlvr/core';
import {
  constrainedResponse,
  jsonFormat,
  multipleSections,
  numberBulletLists,
  numberHighlightedSections,
  numberPlaceholders,
  postscript,
  title,
} from './checks-format.js';
import {
  existence,
  forbiddenWords,
  frequency,
  type InstructionSpec,
  letterFrequency,
} from './checks-keywords.js';
import {
  nthParagraphFirstWord,
  numberParagraphs,
  numberSentences,
  numberWords,
} from './checks-length.js';
import {
  capitalWordFrequency,
  endChecker,
  englishCapital,
  englishLowercase,
  noComma,
  quotation,
  repeatPrompt,
  responseLanguage,
  twoResponses,
} from './checks-misc.js';
import { type CheckContext, FUNCTION_NAME } from './kwargs.js';

/** IFEval's registry (`instructions_registry.INSTRUCTION_DICT`): all 25 instruction ids. */
export const IFEVAL_REGISTRY = {
  'keywords:existence': existence,
  'keywords:frequency': frequency,
  'keywords:forbidden_words': forbiddenWords,
  'keywords:letter_frequency': letterFrequency,
  'language:response_language': responseLanguage,
  'length_constraints:number_sentences': numberSentences,
  'length_constraints:number_paragraphs': numberParagraphs,
  'length_constraints:number_words': numberWords,
  'length_constraints:nth_paragraph_first_word': nthParagraphFirstWord,
  'detectable_content:number_placeholders': numberPlaceholders,
  'detectable_content:postscript': postscript,
  'detectable_format:number_bullet_lists': numberBulletLists,
  'detectable_format:constrained_response': constrainedResponse,
  'detectable_format:number_highlighted_sections': numberHighlightedSections,
  'detectable_format:multiple_sections': multipleSections,
  'detectable_format:json_format': jsonFormat,
  'detectable_format:title': title,
  'combination:two_responses': twoResponses,
  'combination:repeat_prompt': repeatPrompt,
  'startend:end_checker': endChecker,
  'startend:quotation': quotation,
  'change_case:capital_word_frequency': capitalWordFrequency,
  'change_case:english_capital': englishCapital,
  'change_case:english_lowercase': englishLowercase,
  'punctuation:no_comma': noComma,
} as const satisfies Record<string, { keys: readonly string[] }>;

/** One of IFEval's 25 instruction ids, e.g. `'detectable_format:title'`. */
export type IfevalInstructionId = keyof typeof IFEVAL_REGISTRY;

/** Every IFEval instruction id. */
export const IFEVAL_INSTRUCTION_IDS = Object.keys(IFEVAL_REGISTRY) as IfevalInstructionId[];

/**
 * One IFEval instruction as IFEval's data has it: the id and its kwargs (keys with `null` values
 * are ignored, as in the Hugging Face copy of IFEval where every row carries every key).
 */
export type IfevalInstruction = {
  id: IfevalInstructionId;
  kwargs?: Readonly<Record<string, unknown>> | null;
};

/** An instruction whose kwargs were checked: ready to run on any number of responses. */
export type PreparedInstruction = {
  id: IfevalInstructionId;
  /** True for the instructions that need the language detector. */
  language: boolean;
  run(response: string, context: CheckContext): boolean;
};

/**
 * Checks an instruction's id and kwargs: unknown ids and unknown (non-null) kwargs are typed errors
 * with a did-you-mean; a missing required kwarg is an error (IFEval would pick a random value).
 */
export function prepareInstruction(
  id: unknown,
  kwargs: unknown,
  parameter: string,
): PreparedInstruction {
  if (typeof id !== 'string' || !(id in IFEVAL_REGISTRY)) {
    const hint = typeof id === 'string' ? closestOption(id, IFEVAL_INSTRUCTION_IDS) : undefined;
    throw new InvalidArgumentError({
      parameter: `${parameter}.id`,
      functionName: FUNCTION_NAME,
      value: id,
      expected: `an IFEval instruction id${hint ? ` (did you mean '${hint}'?)` : ''}`,
    });
  }
  const instructionSpec = IFEVAL_REGISTRY[id as IfevalInstructionId] as InstructionSpec<unknown>;
  const given = readKwargs(kwargs, `${parameter}.kwargs`);
  for (const key of Object.keys(given)) {
    if (instructionSpec.keys.includes(key)) continue;
    const suggestion = closestOption(key, instructionSpec.keys);
    throw new InvalidArgumentError({
      parameter: `${parameter}.kwargs.${key}`,
      functionName: FUNCTION_NAME,
      value: given[key],
      expected: `a kwarg of '${id}' (${
        suggestion
          ? `did you mean '${suggestion}'?`
          : instructionSpec.keys.length
            ? `one of ${instructionSpec.keys.join(', ')}`
            : 'it takes none'
      })`,
      code: ErrorCode.UNKNOWN_OPTION,
    });
  }
  const read = instructionSpec.read(given, `${parameter}.kwargs`);
  return {
    id: id as IfevalInstructionId,
    language: instructionSpec.language === true,
    run: (response, context) => instructionSpec.check(response, read, context),
  };
}

function readKwargs(kwargs: unknown, parameter: string): Record<string, unknown> {
  if (kwargs === undefined || kwargs === null) return {};
  if (typeof kwargs !== 'object' || Array.isArray(kwargs)) {
    throw new InvalidArgumentError({
      parameter,
      functionName: FUNCTION_NAME,
      value: kwargs,
      expected: 'an object of kwargs (or null)',
    });
  }
  return Object.fromEntries(
    Object.entries(kwargs as Record<string, unknown>).filter(([, value]) => value !== null),
  );
}
