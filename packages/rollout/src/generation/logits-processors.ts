import {
  InvalidArgumentError,
  rejectIneffective,
  SAMPLE_REQUEST_DEFAULTS,
  validateFiniteArray,
} from '@rlvr/core';
import {
  defineOptions,
  integer,
  number,
  type OptionsInput,
  type OptionsOutput,
  parseOptions,
  withDefault,
} from '@rlvr/options';

/**
 * How logits are turned into the distribution a token is sampled from (Hugging Face order),
 * declared once: {@link LogitsProcessorOptions}, {@link LOGITS_OPTION_KEYS}, the defaults (core's
 * `SAMPLE_REQUEST_DEFAULTS`), the validation and the README table come from it.
 */
export const LOGITS_OPTIONS = defineOptions(
  {
    temperature: withDefault(
      number({ min: 0 }),
      SAMPLE_REQUEST_DEFAULTS.temperature,
      'Softmax temperature; 0 means greedy (argmax, lowest id on ties).',
    ),
    topK: withDefault(
      integer({ min: 0 }),
      SAMPLE_REQUEST_DEFAULTS.topK,
      'Keep only the `topK` most likely tokens; 0 = no limit.',
    ),
    topP: withDefault(
      number({ min: 0, max: 1, exclusiveMin: true }),
      SAMPLE_REQUEST_DEFAULTS.topP,
      'Keep the smallest set of most likely tokens whose probability mass reaches `topP`.',
    ),
    minP: withDefault(
      number({ min: 0, max: 1, exclusiveMax: true }),
      SAMPLE_REQUEST_DEFAULTS.minP,
      "Drop tokens whose probability is below `minP` × the top token's probability.",
    ),
    repetitionPenalty: withDefault(
      number({ min: 0, exclusiveMin: true }),
      SAMPLE_REQUEST_DEFAULTS.repetitionPenalty,
      'CTRL repetition penalty over prompt and generated tokens (> 1 discourages repeats).',
    ),
  },
  { parameter: 'options', functionName: 'resolveLogitsOptions' },
);

/** How logits are turned into the distribution a token is sampled from (see {@link LOGITS_OPTIONS}). */
export type LogitsProcessorOptions = OptionsInput<typeof LOGITS_OPTIONS.schema>;

/** The keys of {@link LogitsProcessorOptions}. @internal */
export const LOGITS_OPTION_KEYS = LOGITS_OPTIONS.keys;

/** {@link LogitsProcessorOptions} with every default filled in and checked. */
export type ResolvedLogitsOptions = OptionsOutput<typeof LOGITS_OPTIONS.schema>;

/**
 * Checks sampling options and fills in defaults from core's `SAMPLE_REQUEST_DEFAULTS`
 * (temperature 1, topK 0, topP 1, minP 0, repetitionPenalty 1).
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the offending field; `UNKNOWN_OPTION`
 * for a key that is not an option; `INEFFECTIVE_OPTION` for top-k / top-p / min-p with
 * temperature 0 (greedy decoding ignores them).
 */
export function resolveLogitsOptions(
  options: LogitsProcessorOptions | undefined,
  functionName = 'resolveLogitsOptions',
  prefix = 'options',
): ResolvedLogitsOptions {
  const resolved = parseOptions(LOGITS_OPTIONS.schema, options, {
    parameter: prefix,
    functionName,
  });
  const { temperature, topK, topP, minP } = resolved;
  if (temperature === 0) {
    // greedy decoding takes the argmax, which every filter keeps: the filters would do nothing
    const filters = { topK: topK > 0, topP: topP < 1, minP: minP > 0 } as const;
    for (const [name, active] of Object.entries(filters)) {
      if (!active) continue;
      rejectIneffective({
        parameter: `${prefix}.${name}`,
        value: resolved[name as keyof typeof filters],
        because: `${prefix}.temperature is 0 (greedy: the most likely token is kept by every filter)`,
        functionName,
      });
    }
  }
  return resolved;
}

/**
 * Builds, row by row, the distribution a token is sampled from: repetition penalty → temperature
 * → top-k → top-p (exact nucleus) → min-p, the order Hugging Face `generate` applies them.
 * Buffers are reused between calls (no allocation per token); selection is O(vocab) expected
 * (quickselect), so a 32k vocabulary needs no full sort.
 *
 * After {@link DistributionBuilder.build}, `weights[i]` is proportional to the probability of token
 * `i` (0 for removed tokens) and {@link DistributionBuilder.logprob} gives exact log-probabilities
 * of the kept set, computed from the processed logits in float64.
 *
 * @example
 * ```ts
 * const builder = new DistributionBuilder(4);
 * builder.build([2, 1, 0, -1], 0, resolveLogitsOptions({ topK: 2 }));
 * builder.logprob(0); // log(e² / (e² + e¹)) = −0.313…
 * builder.logprob(2); // −Infinity (removed)
 * ```
 */
export class DistributionBuilder {
  readonly vocabSize: number;
  /** Processed logits (after penalty and temperature), float64. */
  readonly scaled: Float64Array;
  /** Unnormalized probabilities `exp(scaled − max)` of kept tokens; 0 for removed tokens. */
  readonly weights: Float64Array;
  /** Sum of `weights`. */
  keptMass = 0;
  /** log of the normalizer over the kept set: `logprob(i) = scaled[i] − logNormalizer`. */
  logNormalizer = 0;
  /** Index of the most likely token (lowest id on ties). */
  argmax = 0;
  private readonly order: Int32Array;
  private greedy = false;

  constructor(vocabSize: number) {
    this.vocabSize = vocabSize;
    this.scaled = new Float64Array(vocabSize);
    this.weights = new Float64Array(vocabSize);
    this.order = new Int32Array(vocabSize);
  }

  /**
   * Processes one row of logits (`logits[offset … offset + vocabSize)`).
   * `penaltyTokens[0 … penaltyCount)` are the distinct token ids seen so far (for the penalty).
   */
  build(
    logits: ArrayLike<number>,
    offset: number,
    options: ResolvedLogitsOptions,
    penaltyTokens?: ArrayLike<number>,
    penaltyCount = penaltyTokens?.length ?? 0,
  ): void {
    const { vocabSize, scaled, weights } = this;
    for (let index = 0; index < vocabSize; index++) scaled[index] = logits[offset + index]!;
    const penalty = options.repetitionPenalty;
    if (penalty !== 1 && penaltyTokens) {
      for (let index = 0; index < penaltyCount; index++) {
        const token = penaltyTokens[index]!;
        const value = scaled[token]!;
        scaled[token] = value < 0 ? value * penalty : value / penalty;
      }
    }
    let argmax = 0;
    let max = scaled[0]!;
    for (let index = 1; index < vocabSize; index++) {
      if (scaled[index]! > max) {
        max = scaled[index]!;
        argmax = index;
      }
    }
    this.argmax = argmax;
    const temperature = options.temperature;
    this.greedy = temperature === 0;
    if (this.greedy) {
      weights.fill(0);
      weights[argmax] = 1;
      this.keptMass = 1;
      this.logNormalizer = scaled[argmax]!;
      return;
    }
    if (temperature !== 1) {
      const inverse = 1 / temperature;
      for (let index = 0; index < vocabSize; index++) scaled[index] = scaled[index]! * inverse;
      max *= inverse;
    }
    for (let index = 0; index < vocabSize; index++) weights[index] = Math.exp(scaled[index]! - max);

    let candidates = vocabSize;
    const { topK, topP, minP } = options;
    const filterTopK = topK > 0 && topK < vocabSize;
    if (filterTopK || topP < 1) {
      const order = this.order;
      for (let index = 0; index < vocabSize; index++) order[index] = index;
      if (filterTopK) {
        this.selectBest(0, vocabSize, topK);
        for (let index = topK; index < vocabSize; index++) weights[order[index]!] = 0;
        candidates = topK;
      }
      if (topP < 1) {
        let mass = 0;
        for (let index = 0; index < candidates; index++) mass += weights[order[index]!]!;
        const kept = this.selectNucleus(candidates, topP * mass);
        for (let index = kept; index < candidates; index++) weights[order[index]!] = 0;
      }
    }
    if (minP > 0) {
      // p_i < minP · p_max  ⇔  weights[i] < minP, since the top token has weight exp(0) = 1.
      for (let index = 0; index < vocabSize; index++) {
        if (weights[index]! < minP) weights[index] = 0;
      }
      weights[argmax] = 1;
    }
    let keptMass = 0;
    for (let index = 0; index < vocabSize; index++) keptMass += weights[index]!;
    this.keptMass = keptMass;
    this.logNormalizer = max + Math.log(keptMass);
  }

  /** Log-probability of `token` under the built distribution (−Infinity when removed). */
  logprob(token: number): number {
    if (this.weights[token] === 0) return -Infinity;
    if (this.greedy) return 0;
    return this.scaled[token]! - this.logNormalizer;
  }

  /**
   * Draws a token by inverse CDF over token ids in ascending order, with `uniform` in [0, 1).
   * The same uniform always gives the same token for the same distribution.
   */
  sample(uniform: number): number {
    const { weights, vocabSize } = this;
    const target = uniform * this.keptMass;
    let cumulative = 0;
    let last = this.argmax;
    for (let index = 0; index < vocabSize; index++) {
      const weight = weights[index]!;
      if (weight === 0) continue;
      cumulative += weight;
      last = index;
      if (target < cumulative) return index;
    }
    return last;
  }

  /** True when token `a` ranks before token `b` (higher processed logit, then lower id). */
  private better(a: number, b: number): boolean {
    const za = this.scaled[a]!;
    const zb = this.scaled[b]!;
    return za > zb || (za === zb && a < b);
  }

  /**
   * Partitions `order[lo … hi)` around a median-of-three pivot: better tokens first. Returns the
   * pivot's final position.
   */
  private partition(lo: number, hi: number): number {
    const order = this.order;
    const mid = lo + ((hi - lo) >> 1);
    const last = hi - 1;
    // median of three into `last`
    const a = order[lo]!;
    const b = order[mid]!;
    const c = order[last]!;
    let pivotIndex: number;
    if (this.better(a, b)) {
      if (this.better(b, c)) pivotIndex = mid;
      else pivotIndex = this.better(a, c) ? last : lo;
    } else if (this.better(a, c)) pivotIndex = lo;
    else pivotIndex = this.better(b, c) ? last : mid;
    const pivot = order[pivotIndex]!;
    order[pivotIndex] = order[last]!;
    order[last] = pivot;
    let store = lo;
    for (let index = lo; index < last; index++) {
      const token = order[index]!;
      if (this.better(token, pivot)) {
        order[index] = order[store]!;
        order[store] = token;
        store++;
      }
    }
    order[last] = order[store]!;
    order[store] = pivot;
    return store;
  }

  /** Moves the `count` best tokens of `order[lo … hi)` to its front (quickselect). */
  private selectBest(lo: number, hi: number, count: number): void {
    let left = lo;
    let right = hi;
    const target = lo + count;
    while (right - left > 1) {
      const pivot = this.partition(left, right);
      if (pivot === target || pivot === target - 1) return;
      if (pivot > target) right = pivot;
      else left = pivot + 1;
    }
  }

  /**
   * Moves the nucleus (smallest best-first prefix of `order[0 … count)` whose weight reaches
   * `targetMass`) to the front and returns its size.
   */
  private selectNucleus(count: number, targetMass: number): number {
    const { order, weights } = this;
    let left = 0;
    let right = count;
    let accumulated = 0; // mass of order[0 … left), all kept
    while (right - left > 0) {
      if (right - left <= 16) {
        // small range: insertion sort, then walk
        for (let index = left + 1; index < right; index++) {
          const token = order[index]!;
          let position = index - 1;
          while (position >= left && this.better(token, order[position]!)) {
            order[position + 1] = order[position]!;
            position--;
          }
          order[position + 1] = token;
        }
        for (let index = left; index < right; index++) {
          accumulated += weights[order[index]!]!;
          if (accumulated >= targetMass) return index + 1;
        }
        return right;
      }
      const pivot = this.partition(left, right);
      let before = 0;
      for (let index = left; index < pivot; index++) before += weights[order[index]!]!;
      if (accumulated + before >= targetMass) {
        right = pivot;
        continue;
      }
      accumulated += before + weights[order[pivot]!]!;
      if (accumulated >= targetMass) return pivot + 1;
      left = pivot + 1;
    }
    return right;
  }
}

/** A processed distribution as plain data: the kept tokens (ascending ids) and their logprobs. */
export type TokenDistribution = { tokenIds: number[]; logprobs: number[] };

/**
 * The distribution a token would be sampled from for one row of logits, after repetition penalty,
 * temperature, top-k, exact top-p and min-p: kept token ids (ascending) with their normalized
 * log-probabilities. Convenient for inspection and tests; the sampler uses
 * {@link DistributionBuilder} directly.
 *
 * @example
 * ```ts
 * processLogits([3, 2, 1, 0], { topP: 0.7 });
 * // { tokenIds: [0, 1], logprobs: [-0.313…, -1.313…] }
 * ```
 * @throws {InvalidArgumentError} on bad options or token ids; {@link NonFiniteError} on NaN/+∞.
 */
export function processLogits(
  logits: ArrayLike<number>,
  options?: LogitsProcessorOptions,
  previousTokenIds: ArrayLike<number> = [],
): TokenDistribution {
  validateFiniteArray(logits, {
    parameter: 'logits',
    functionName: 'processLogits',
    allowInfinity: 'negative',
  });
  if (logits.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'logits',
      functionName: 'processLogits',
      value: logits,
      expected: 'a non-empty array',
    });
  }
  const resolved = resolveLogitsOptions(options, 'processLogits');
  const distinct = [...new Set(Array.from(previousTokenIds))];
  for (const token of distinct) {
    if (!Number.isInteger(token) || token < 0 || token >= logits.length) {
      throw new InvalidArgumentError({
        parameter: 'previousTokenIds',
        functionName: 'processLogits',
        value: token,
        expected: `token ids in [0, ${logits.length})`,
      });
    }
  }
  const builder = new DistributionBuilder(logits.length);
  builder.build(logits, 0, resolved, distinct);
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  for (let token = 0; token < logits.length; token++) {
    if (builder.weights[token] === 0) continue;
    tokenIds.push(token);
    logprobs.push(builder.logprob(token));
  }
  return { tokenIds, logprobs };
}
