import { InvalidArgumentError, validateOneOf, validateOptions } from '@rlvr/core';
import { type CheckContext, FUNCTION_NAME, type IfevalSemantics } from './kwargs.js';
import { type LanguageDetector, loadLanguageDetector } from './language.js';
import {
  type IfevalInstruction,
  type IfevalInstructionId,
  type PreparedInstruction,
  prepareInstruction,
} from './registry.js';

/** Options of {@link checkIfeval}. */
export type IfevalCheckOptions = {
  /** `'hardened'` (default) or `'official'`: see {@link IfevalSemantics}. */
  semantics?: IfevalSemantics;
  /** Needed by the three language instructions: `await loadLanguageDetector()`. */
  detector?: LanguageDetector;
};

/** The verdict on one instruction, strict (the response as is) and loose (any of 8 variants). */
export type IfevalInstructionResult = { id: IfevalInstructionId; strict: boolean; loose: boolean };

/** Result of {@link checkIfeval}: prompt-level verdicts and one result per instruction. */
export type IfevalResult = {
  /** All instructions followed by the response as is (IFEval's prompt-level strict). */
  strict: boolean;
  /** All instructions followed, each by some loose variant (prompt-level loose). */
  loose: boolean;
  results: IfevalInstructionResult[];
};

const CHECK_OPTION_KEYS = ['semantics', 'detector'] as const;
const SEMANTICS = ['hardened', 'official'] as const;

/**
 * IFEval's loose variants of a response: as is, without its first line, without its last line,
 * without both (each stripped), and the same four with every `*` removed.
 */
export function looseVariants(response: string): string[] {
  const first = response.indexOf('\n');
  const last = response.lastIndexOf('\n');
  const withoutFirst = first < 0 ? '' : response.slice(first + 1).trim();
  const withoutLast = last < 0 ? '' : response.slice(0, last).trim();
  const withoutBoth = first < 0 || first === last ? '' : response.slice(first + 1, last).trim();
  const plain = (text: string) => text.split('*').join('');
  return [
    response,
    plain(response),
    withoutFirst,
    withoutLast,
    withoutBoth,
    plain(withoutFirst),
    plain(withoutLast),
    plain(withoutBoth),
  ];
}

export function readCheckOptions(options: unknown, functionName = FUNCTION_NAME): CheckContext {
  const given = validateOptions<IfevalCheckOptions>(options, {
    parameter: 'options',
    functionName,
    known: CHECK_OPTION_KEYS,
  });
  const semantics =
    given.semantics === undefined
      ? 'hardened'
      : validateOneOf(given.semantics, SEMANTICS, { parameter: 'options.semantics', functionName });
  if (given.detector !== undefined && typeof given.detector?.detect !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.detector',
      functionName,
      value: given.detector,
      expected: 'a LanguageDetector (from loadLanguageDetector())',
    });
  }
  return { semantics, detector: given.detector };
}

export function prepareInstructions(
  instructions: unknown,
  name = 'instructions',
): PreparedInstruction[] {
  if (!Array.isArray(instructions) || instructions.length === 0) {
    throw new InvalidArgumentError({
      parameter: name,
      functionName: FUNCTION_NAME,
      value: instructions,
      expected: 'a non-empty array of { id, kwargs } IFEval instructions',
    });
  }
  return instructions.map((instruction: unknown, index) => {
    const parameter = `${name}[${index}]`;
    if (typeof instruction !== 'object' || instruction === null) {
      throw new InvalidArgumentError({
        parameter,
        functionName: FUNCTION_NAME,
        value: instruction,
        expected: 'an { id, kwargs } object',
      });
    }
    const { id, kwargs, ...rest } = instruction as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.${extra}`,
        functionName: FUNCTION_NAME,
        value: rest[extra],
        expected: "only 'id' and 'kwargs'",
        code: 'UNKNOWN_OPTION',
      });
    }
    return prepareInstruction(id, kwargs, parameter);
  });
}

/** Runs prepared instructions on one response (an empty response follows none, as in IFEval). */
export function runPrepared(
  response: string,
  prepared: readonly PreparedInstruction[],
  context: CheckContext,
): IfevalResult {
  const variants = looseVariants(response).slice(1); // the first variant is the response itself
  const detected = new Map<string, string | null>();
  const { detector } = context;
  const cached: CheckContext =
    detector === undefined
      ? context
      : {
          ...context,
          detector: {
            languages: detector.languages,
            detect(text) {
              if (!detected.has(text)) detected.set(text, detector.detect(text));
              return detected.get(text) ?? null;
            },
          },
        };
  const follows = (instruction: PreparedInstruction, text: string) =>
    text.trim() !== '' && instruction.run(text, cached);
  const results = prepared.map((instruction) => {
    const strict = follows(instruction, response);
    return {
      id: instruction.id,
      strict,
      loose: strict || variants.some((variant) => follows(instruction, variant)),
    };
  });
  return {
    strict: results.every((item) => item.strict),
    loose: results.every((item) => item.loose),
    results,
  };
}

/**
 * Checks a response against IFEval instructions, strictly and loosely, as IFEval's
 * `evaluation_lib` does. See the README's IFEval table for each instruction's rule.
 *
 * @example
 * ```ts
 * checkIfeval('"Hi, there."', [
 *   { id: 'startend:quotation' },
 *   { id: 'punctuation:no_comma' },
 * ]); // { strict: false, loose: false, results: [{ strict: true, … }, { strict: false, … }] }
 * ```
 * @throws {InvalidArgumentError} for an unknown id or kwarg (did you mean), a missing or invalid
 * kwarg, an unknown option, or a language instruction without `options.detector`.
 */
export function checkIfeval(
  response: string,
  instructions: readonly IfevalInstruction[],
  options?: IfevalCheckOptions,
): IfevalResult {
  if (typeof response !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'response',
      functionName: FUNCTION_NAME,
      value: response,
      expected: 'a string',
    });
  }
  const context = readCheckOptions(options);
  const prepared = prepareInstructions(instructions);
  if (context.detector === undefined && prepared.some((instruction) => instruction.language)) {
    throw new InvalidArgumentError({
      parameter: 'options.detector',
      functionName: FUNCTION_NAME,
      value: undefined,
      expected: 'a LanguageDetector for language instructions (await loadLanguageDetector())',
    });
  }
  return runPrepared(response, prepared, context);
}

/** {@link checkIfeval} that loads the language detector itself when an instruction needs it. */
export async function checkIfevalAsync(
  response: string,
  instructions: readonly IfevalInstruction[],
  options?: IfevalCheckOptions,
): Promise<IfevalResult> {
  const context = readCheckOptions(options);
  const prepared = prepareInstructions(instructions);
  const detector =
    context.detector ??
    (prepared.some((instruction) => instruction.language)
      ? await loadLanguageDetector()
      : undefined);
  if (typeof response !== 'string') return checkIfeval(response, instructions, options);
  return runPrepared(response, prepared, { semantics: context.semantics, detector });
}
