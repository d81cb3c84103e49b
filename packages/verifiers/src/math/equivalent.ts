import { InvalidArgumentError, validateNumber, validateOptions } from '@rlvr/core';
import { type CompareOptions, DEFAULT_COMPARE_OPTIONS, valuesEqual } from './compare.js';
import {
  DEFAULT_PARSE_OPTIONS,
  type MathValue,
  type ParseOptions,
  parseAnswer,
} from './structure.js';

/** Options of {@link mathEquivalent}. */
export type EquivalenceOptions = {
  /**
   * Relative tolerance applied when either side contains a decimal literal (`0.333333` vs `1/3`).
   * Exact values (integers, fractions, `2^{10}`) always compare exactly. Default `1e-6`.
   */
  tolerance?: number;
  /** Let `N%` also match `N/100` when a `%` sign is written (default true). */
  percent?: boolean;
};

/** Keys of {@link EquivalenceOptions}. @internal */
export const EQUIVALENCE_OPTION_KEYS = ['tolerance', 'percent'] as const;

type Parsed = ReturnType<typeof parseAnswer>;

const CACHE_LIMIT = 2048;
const cache = new Map<string, Parsed>();

/** Parses an answer with a small cache (gold answers are parsed once per group of samples). */
export function parseCached(text: string, options: ParseOptions = DEFAULT_PARSE_OPTIONS): Parsed {
  const key = `${options.maxItems}\u0000${text}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const parsed = parseAnswer(text, options);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, parsed);
  return parsed;
}

export function resolveCompareOptions(
  options: EquivalenceOptions | undefined,
  functionName: string,
): CompareOptions {
  if (options === undefined) return DEFAULT_COMPARE_OPTIONS;
  const tolerance =
    options.tolerance === undefined
      ? DEFAULT_COMPARE_OPTIONS.tolerance
      : validateNumber(options.tolerance, {
          parameter: 'options.tolerance',
          functionName,
          min: 0,
          max: 1,
        });
  return { tolerance, percent: options.percent ?? DEFAULT_COMPARE_OPTIONS.percent };
}

function compact(text: string): string {
  return text.replace(/\s+/g, '');
}

/** Equivalence of two parsed-or-failed answers; unreadable answers compare as compact strings. */
export function parsedEquivalent(a: Parsed, b: Parsed, options: CompareOptions): boolean {
  if ('value' in a && 'value' in b) return safeEqual(a.value, b.value, options);
  if ('error' in a && 'error' in b)
    return a.cleaned !== '' && compact(a.cleaned) === compact(b.cleaned);
  return false;
}

export function safeEqual(a: MathValue, b: MathValue, options: CompareOptions): boolean {
  try {
    return valuesEqual(a, b, options);
  } catch {
    return false; // e.g. stack overflow on pathological input: not equivalent
  }
}

/**
 * Symmetric equivalence of two already-extracted answers: `0.5`, `1/2` and `\frac{1}{2}` are
 * equivalent; so are `\sqrt{12}` and `2\sqrt{3}`, `(x+1)^2` and `x^2+2x+1`, `\{1,2\}` and
 * `\{2,1\}`, `x = 3` and `3`, `(A)` and `A`. Answers that cannot be read as math are equivalent only
 * when equal as strings (ignoring whitespace). Never throws on answer text.
 *
 * @example
 * ```ts
 * mathEquivalent('\\frac{1}{2}', '0.5'); // true
 * mathEquivalent('[1, 2)', '(1, 2)');    // false (interval ends differ)
 * ```
 * @throws {InvalidArgumentError} only for a non-string argument or a bad option.
 */
export function mathEquivalent(a: string, b: string, options?: EquivalenceOptions): boolean {
  validateString(a, 'a', 'mathEquivalent');
  validateString(b, 'b', 'mathEquivalent');
  validateOptions(options, {
    parameter: 'options',
    functionName: 'mathEquivalent',
    known: EQUIVALENCE_OPTION_KEYS,
  });
  const compareOptions = resolveCompareOptions(options, 'mathEquivalent');
  return parsedEquivalent(parseCached(a), parseCached(b), compareOptions);
}

export function validateString(value: unknown, parameter: string, functionName: string): string {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError({ parameter, functionName, value, expected: 'a string' });
  }
  return value;
}
