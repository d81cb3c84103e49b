import {
  InvalidArgumentError,
  type VerifyResult,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import type { CompareOptions } from './compare.js';
import {
  EQUIVALENCE_OPTION_KEYS,
  type EquivalenceOptions,
  parseCached,
  resolveCompareOptions,
  safeEqual,
  validateString,
} from './equivalent.js';
import {
  EXTRACT_OPTION_KEYS,
  type ExtractOptions,
  type ExtractSource,
  extractDetailed,
  resolveExtractOptions,
} from './extract.js';
import { readGold } from './gold.js';
import { hasProseWord, type MathValue } from './structure.js';

/** Options of {@link verifyMath}: extraction options plus equivalence options. */
export type VerifyMathOptions = ExtractOptions &
  EquivalenceOptions & {
    /** Most items in a set/list/tuple/matrix answer (default 64); larger answers are rejected. */
    maxItems?: number;
  };

/** Result of {@link verifyMath}: a core `VerifyResult` with the extraction source. */
export type MathVerifyResult = VerifyResult & {
  /** 1 (equivalent), 0 (not), or null when the gold answer cannot be parsed. */
  score: 1 | 0 | null;
  correct: boolean;
  extracted: string | null;
  /** Where the answer was found. */
  source: ExtractSource;
  timings: { extractMs: number; compareMs: number; totalMs: number };
  violations: string[];
};

type Resolved = {
  extract: ReturnType<typeof resolveExtractOptions>;
  compare: CompareOptions;
  maxItems: number;
};

/** Keys of {@link VerifyMathOptions}. @internal */
export const VERIFY_MATH_OPTION_KEYS = [
  ...EXTRACT_OPTION_KEYS,
  ...EQUIVALENCE_OPTION_KEYS,
  'maxItems',
] as const;

export function resolveVerifyMathOptions(
  options: VerifyMathOptions | undefined,
  functionName: string,
  parameter = 'options',
): Resolved {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value: options,
      expected: 'an options object',
    });
  }
  validateOptions(options, { parameter, functionName, known: VERIFY_MATH_OPTION_KEYS });
  return {
    extract: resolveExtractOptions(options, functionName),
    compare: resolveCompareOptions(options, functionName),
    maxItems:
      options?.maxItems === undefined
        ? 64
        : validateInteger(options.maxItems, {
            parameter: 'options.maxItems',
            functionName,
            min: 1,
            max: 4096,
          }),
  };
}

function itemCount(value: MathValue): number {
  switch (value.kind) {
    case 'set':
    case 'list':
    case 'tuple':
    case 'union':
    case 'alternatives':
      return value.items.length;
    case 'matrix':
      return value.rows.length * (value.rows[0]?.length ?? 0);
    default:
      return 1;
  }
}

function isChoiceCollection(value: MathValue): boolean {
  return (
    (value.kind === 'set' || value.kind === 'list' || value.kind === 'alternatives') &&
    value.items.length > 1 &&
    value.items.every((item) => item.kind === 'choice')
  );
}

const now = (): number => performance.now();

/**
 * `a + b = 11` answers with 11 when the gold is a value, not an equation (the gold `2x + z = 1`
 * still needs an equation: an answer `1` does not match it).
 */
function statedValue(value: MathValue, gold: MathValue): MathValue {
  if (value.kind !== 'equation' || value.lhsName !== null) return value;
  if (gold.kind === 'equation' || value.rhs.kind !== 'scalar') return value;
  return value.rhs.compiled.variables.length === 0 ? value.rhs : value;
}

/** A gold written as a solution with an answer statement ("… The final answer is $28\\%$."). */
function goldAnswer(text: string, options: Resolved): string {
  if (!hasProseWord(text.replace(/\$[^$]*\$/g, ' '))) return text;
  const marked = extractDetailed(text, { ...options.extract, fallback: 'none' });
  return marked.answer !== null && marked.source !== 'none' ? marked.answer : text;
}

/** Core of verifyMath with resolved options (shared with the worker pool). */
export function verifyMathResolved(
  response: string,
  gold: string,
  options: Resolved,
): MathVerifyResult {
  const start = now();
  const result = (
    score: 1 | 0 | null,
    reason: string,
    extracted: string | null,
    source: ExtractSource,
    violations: string[],
    extractEnd: number,
  ): MathVerifyResult => {
    const end = now();
    return {
      score,
      correct: score === 1,
      extracted,
      reason,
      source,
      violations,
      timings: { extractMs: extractEnd - start, compareMs: end - extractEnd, totalMs: end - start },
    };
  };
  const goldText = readGold(gold);
  if ('error' in goldText) {
    return result(null, `gold answer cannot be used: ${goldText.error}`, null, 'none', [], now());
  }
  const goldParsed = parseCached(goldAnswer(goldText.text, options), {
    maxItems: options.maxItems,
  });
  if ('error' in goldParsed) {
    return result(
      null,
      `gold answer cannot be parsed (${goldParsed.error})`,
      null,
      'none',
      [],
      now(),
    );
  }
  const goldValue = goldParsed.value;
  if (goldValue.kind === 'alternatives') {
    return result(
      null,
      'gold answer is ambiguous (it lists alternatives)',
      null,
      'none',
      [],
      now(),
    );
  }
  let extraction: ReturnType<typeof extractDetailed>;
  try {
    extraction = extractDetailed(response, options.extract);
  } catch (error) {
    return result(
      0,
      `could not extract an answer (${(error as Error).message})`,
      null,
      'none',
      ['extraction-failed'],
      now(),
    );
  }
  const extractEnd = now();
  const { source } = extraction;
  const violations = extraction.violations;
  let candidate: MathValue | null = null;
  const goldItems = itemCount(
    goldValue.kind === 'equation' && goldValue.lhsName !== null ? goldValue.rhs : goldValue,
  );
  if (goldItems > 1 && !isChoiceCollection(goldValue)) {
    // A gold that lists several values may be answered by several boxes ("the solutions are
    // \boxed{2} and \boxed{3}") or by "x = 1 or x = 2": read them as one list.
    const lists = [
      ...(extraction.alternatives ? [extraction.alternatives] : []),
      ...extraction.boxLists,
    ];
    const matched = lists.find((items) =>
      safeEqual({ kind: 'list', items }, goldValue, options.compare),
    );
    if (matched) {
      const extracted = extraction.answer ?? extraction.candidates.join(', ');
      return result(
        1,
        'equivalent to the gold answer (several values)',
        extracted,
        source,
        violations.filter((violation) => violation !== 'hedged'),
        extractEnd,
      );
    }
  }
  if (extraction.answer === null || !extraction.parsed) {
    const reason = violations.includes('hedged')
      ? 'response hedges between different answers'
      : violations.includes('question-echo')
        ? 'response only echoes the question'
        : violations.includes('answer-too-long')
          ? 'answer is absurdly long'
          : violations.includes('empty-answer')
            ? 'answer is empty'
            : (extraction.reason ?? 'no answer found');
    return result(0, reason, null, source, violations, extractEnd);
  } else if ('error' in extraction.parsed) {
    return result(
      0,
      `answer cannot be read (${extraction.parsed.error})`,
      extraction.answer,
      source,
      violations,
      extractEnd,
    );
  } else {
    candidate = statedValue(extraction.parsed.value, goldValue);
  }
  if (goldValue.kind === 'choice' && isChoiceCollection(candidate)) {
    return result(
      0,
      'response picks several choices',
      extraction.answer,
      source,
      [...violations, 'hedged'],
      extractEnd,
    );
  }
  if (itemCount(candidate) > options.maxItems) {
    return result(
      0,
      'answer has too many items',
      extraction.answer,
      source,
      [...violations, 'answer-too-long'],
      extractEnd,
    );
  }
  const equal = safeEqual(candidate, goldValue, options.compare);
  return result(
    equal ? 1 : 0,
    equal ? 'equivalent to the gold answer' : 'not equivalent to the gold answer',
    extraction.answer ?? extraction.candidates.join(' or '),
    source,
    violations,
    extractEnd,
  );
}

/**
 * Checks a model response against a gold answer: extracts the final answer (see
 * {@link extractAnswer} for the priority order), normalizes both, and tests equivalence (exact
 * rationals, numeric tolerance for decimals, symbolic equivalence by evaluation at sample points,
 * intervals, sets vs tuples, matrices, multiple choice, equations).
 *
 * Score 1 when equivalent, 0 otherwise — including hedged answers (several different answers),
 * empty or absurdly long answers, and responses that only echo the question — and `null` when the
 * gold answer itself cannot be parsed (not applicable, never a free reward). Never throws on model
 * output; for a hard time limit on hostile inputs use {@link createMathVerifierPool}.
 *
 * @example
 * ```ts
 * verifyMath('Adding them up gives \\boxed{\\dfrac{1}{2}}.', '0.5').score; // 1
 * verifyMath('\\boxed{1} or maybe \\boxed{2}', '1').violations;         // ['hedged']
 * verifyMath('#### 1,000', '1000').correct;                              // true
 * ```
 * @throws {InvalidArgumentError} for a non-string response, a gold that is neither a string nor a
 * finite number, or invalid options.
 */
export function verifyMath(
  response: string,
  gold: string | number,
  options?: VerifyMathOptions,
): MathVerifyResult {
  validateString(response, 'response', 'verifyMath');
  const goldText = goldToString(gold, 'verifyMath');
  return verifyMathResolved(response, goldText, resolveVerifyMathOptions(options, 'verifyMath'));
}

export function goldToString(gold: unknown, functionName: string): string {
  if (typeof gold === 'number' && Number.isFinite(gold)) return String(gold);
  if (typeof gold === 'string') return gold;
  throw new InvalidArgumentError({
    parameter: 'gold',
    functionName,
    value: gold,
    expected: 'a string or a finite number',
  });
}
