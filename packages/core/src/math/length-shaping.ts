import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { FINISH_REASONS, type FinishReason } from '../types/sampler.js';
import {
  validateFiniteArray,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
  validateRagged,
} from '../validation/validate.js';

/** Options of {@link softOverlongPenalty} (DAPO). */
export type SoftOverlongOptions = {
  /** L_max: the hard cap on completion tokens (maxNewTokens). */
  maxLength: number;
  /** L_cache: length of the soft-penalty zone before L_max. */
  bufferLength: number;
  /** Penalty at (and beyond) L_max. Default 1. */
  penaltyFactor?: number;
};

/**
 * DAPO's soft overlong punishment, added to the reward: 0 up to L_max − L_cache, then falling
 * linearly to −penaltyFactor at L_max, and −penaltyFactor beyond.
 *
 * @example
 * ```ts
 * softOverlongPenalty(900, { maxLength: 1024, bufferLength: 256 }); // -(900-768)/256 = -0.515625
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the bad parameter.
 */
export function softOverlongPenalty(length: number, options: SoftOverlongOptions): number {
  const FN = 'softOverlongPenalty';
  validateInteger(length, { parameter: 'length', functionName: FN, min: 0 });
  const raw = validateOptions<SoftOverlongOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['maxLength', 'bufferLength', 'penaltyFactor'],
  });
  const maxLength = validateInteger(raw.maxLength, {
    parameter: 'options.maxLength',
    functionName: FN,
    min: 1,
  });
  const bufferLength = validateInteger(raw.bufferLength, {
    parameter: 'options.bufferLength',
    functionName: FN,
    min: 1,
    max: maxLength,
  });
  const penaltyFactor = validateNumber(raw.penaltyFactor ?? 1, {
    parameter: 'options.penaltyFactor',
    functionName: FN,
    min: 0,
  });
  const expected = maxLength - bufferLength;
  if (length <= expected) return 0;
  return Math.max(-((length - expected) / bufferLength) * penaltyFactor, -penaltyFactor);
}

/**
 * Truncated-completion masking (DAPO "overlong filtering", TRL `mask_truncated_completions`):
 * returns a copy of `mask` where every completion that hit the length cap is fully masked, so
 * cut-off reasoning is neither rewarded nor punished. A completion ended by a confidence stop
 * (`finishReason: 'confidence'`) is cut off too and is masked the same way.
 *
 * @throws {ShapeMismatchError} when `finishReasons` does not have one entry per sequence.
 */
export function maskTruncatedCompletions(
  mask: readonly ArrayLike<number>[],
  finishReasons: readonly FinishReason[],
): number[][] {
  const FN = 'maskTruncatedCompletions';
  validateRagged(mask, { parameter: 'mask', functionName: FN });
  if (!Array.isArray(finishReasons) || finishReasons.length !== mask.length) {
    throw new ShapeMismatchError({
      parameter: 'finishReasons',
      functionName: FN,
      expected: `${mask.length} finish reasons (one per sequence)`,
      actual: Array.isArray(finishReasons) ? `${finishReasons.length}` : 'not an array',
    });
  }
  return mask.map((row, sequence) => {
    const reason = validateOneOf(finishReasons[sequence], FINISH_REASONS, {
      parameter: `finishReasons[${sequence}]`,
      functionName: FN,
    });
    return Array.from({ length: row.length }, (_, index) =>
      reason === 'length' || reason === 'confidence' ? 0 : row[index]!,
    );
  });
}

/**
 * Kimi k1.5's group length penalty: within a group, λ_i = 0.5 − (len_i − min)/(max − min);
 * correct answers get λ_i, wrong ones min(0, λ_i). All lengths equal → all 0.
 * Add the result (times a coefficient) to the rewards.
 *
 * @throws {ShapeMismatchError} when the arrays differ in length.
 */
export function groupLengthPenalty(
  lengths: readonly number[],
  correct: readonly boolean[],
): number[] {
  const FN = 'groupLengthPenalty';
  validateFiniteArray(lengths, { parameter: 'lengths', functionName: FN });
  if (!Array.isArray(correct) || correct.length !== lengths.length) {
    throw new ShapeMismatchError({
      parameter: 'correct',
      functionName: FN,
      expected: `${lengths.length} booleans (like lengths)`,
      actual: Array.isArray(correct) ? `${correct.length}` : 'not an array',
    });
  }
  if (lengths.length === 0) return [];
  const min = Math.min(...lengths);
  const max = Math.max(...lengths);
  if (max === min) return lengths.map(() => 0);
  return lengths.map((length, index) => {
    const lambda = 0.5 - (length - min) / (max - min);
    return correct[index] ? lambda : Math.min(0, lambda);
  });
}

/** Options of {@link lengthBudgetPenalty}. */
export type LengthBudgetOptions = {
  /** Target number of tokens. */
  budget: number;
  /** Penalty per token of deviation. */
  coefficient: number;
  /** `exceed`: only tokens over the budget cost (default); `absolute`: any deviation (L1, LCPO). */
  mode?: 'exceed' | 'absolute';
};

/**
 * A token-budget penalty to add to the reward: −coefficient·max(0, len − budget) (`exceed`) or
 * −coefficient·|len − budget| (`absolute`, as in L1/LCPO length-controlled RL).
 * @throws {InvalidArgumentError} naming the bad parameter.
 */
export function lengthBudgetPenalty(length: number, options: LengthBudgetOptions): number {
  const FN = 'lengthBudgetPenalty';
  validateNumber(length, { parameter: 'length', functionName: FN, min: 0 });
  const raw = validateOptions<LengthBudgetOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['budget', 'coefficient', 'mode'],
  });
  const budget = validateNumber(raw.budget, {
    parameter: 'options.budget',
    functionName: FN,
    min: 0,
  });
  const coefficient = validateNumber(raw.coefficient, {
    parameter: 'options.coefficient',
    functionName: FN,
    min: 0,
  });
  const mode = validateOneOf(raw.mode ?? 'exceed', ['exceed', 'absolute'], {
    parameter: 'options.mode',
    functionName: FN,
  });
  const deviation = mode === 'exceed' ? Math.max(0, length - budget) : Math.abs(length - budget);
  return deviation === 0 ? 0 : -coefficient * deviation;
}
