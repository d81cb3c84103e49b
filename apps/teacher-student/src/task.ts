import { createRng, InvalidArgumentError, type Rng, validateInteger } from '@rlvr/core';
import { buildCharTokenizer, type TokenizerFiles } from '@rlvr/model';

/**
 * The synthetic verifiable task: a chain of single-digit additions and subtractions, evaluated
 * modulo 10. `(3+5-9+2)%10=` has the answer 1. A model that writes the running value after each
 * operation in a chain of thought only ever needs one single-digit fact per step; answering in one
 * go needs all of them at once, so reasoning steps help.
 */
export type ModArithProblem = {
  id: string;
  /** The prompt text, e.g. `(3+5-9+2)%10=`. */
  prompt: string;
  /** The gold answer, one digit. */
  answer: string;
  /** The operands. */
  terms: number[];
  /** The operators between them (`+` / `-`), `terms.length - 1` of them. */
  operators: ('+' | '-')[];
};

/** Settings of the task generator. */
export type TaskConfig = {
  /** Fewest operands per problem (≥ 2). */
  minTerms: number;
  /** Most operands per problem. */
  maxTerms: number;
  /** Operators drawn uniformly per position. */
  operators: ('+' | '-')[];
  /** Operands after the first are drawn from 1..termMax (the first from 0..9). */
  termMax: number;
};

/** Tags of the R1 format, single tokens of the task tokenizer. */
export const THINK_OPEN = '<think>';
export const THINK_CLOSE = '</think>';
export const ANSWER_OPEN = '<answer>';
export const ANSWER_CLOSE = '</answer>';
const TAGS = [THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE];

const mod10 = (value: number) => ((value % 10) + 10) % 10;

/** The running values of a problem, one per operation (the last one is the answer). */
export function runningValues(problem: Pick<ModArithProblem, 'terms' | 'operators'>): number[] {
  const values: number[] = [];
  let value = problem.terms[0]!;
  problem.operators.forEach((operator, index) => {
    const term = problem.terms[index + 1]!;
    value = mod10(operator === '+' ? value + term : value - term);
    values.push(value);
  });
  return values;
}

/**
 * The reference solution in the R1 format: `<think>3+5=8,8-9=9,9+2=1</think><answer>1</answer>`.
 */
export function solve(problem: Pick<ModArithProblem, 'terms' | 'operators'>): string {
  const values = runningValues(problem);
  let previous = problem.terms[0]!;
  const steps = problem.operators.map((operator, index) => {
    const step = `${previous}${operator}${problem.terms[index + 1]}=${values[index]}`;
    previous = values[index]!;
    return step;
  });
  return `${THINK_OPEN}${steps.join(',')}${THINK_CLOSE}${ANSWER_OPEN}${values.at(-1)}${ANSWER_CLOSE}`;
}

/**
 * A solution written by a sloppy solver: each step's result is, with probability `slipRate`, a
 * wrong digit (uniform over the other nine), and the chain continues from the written value — so
 * every later step is locally right but the answer is wrong. The warm-start data of the default run
 * is written this way: an imperfect cold start (as demonstrations from people or weaker models are)
 * whose slips RL with a verifier can remove.
 */
export function solveWithSlips(
  problem: Pick<ModArithProblem, 'terms' | 'operators'>,
  rng: Rng,
  slipRate: number,
): string {
  let previous = problem.terms[0]!;
  const steps = problem.operators.map((operator, index) => {
    const term = problem.terms[index + 1]!;
    let value = mod10(operator === '+' ? previous + term : previous - term);
    if (slipRate > 0 && rng.next() < slipRate) value = (value + 1 + rng.nextInt(9)) % 10;
    const step = `${previous}${operator}${term}=${value}`;
    previous = value;
    return step;
  });
  return `${THINK_OPEN}${steps.join(',')}${THINK_CLOSE}${ANSWER_OPEN}${previous}${ANSWER_CLOSE}`;
}

/** How the warm-start solver writes its traces (each trace picks one style). */
export type TraceStyle = {
  /** Per-step slip probability (see {@link solveWithSlips}). */
  slipRate: number;
  /**
   * Probability of the short style: no intermediate steps, `<think></think>` and the answer the
   * solver computes in its head, which slips once per operation with probability `slipRate`
   * (so long chains answered short are wrong more often than long chains written out).
   */
  shortRate: number;
  /**
   * Probability of a hedged answer: the trace's final value followed by 1–`hedgeMaxExtra` other digits, as a list (`<answer>7,1</answer>`). A single-number verifier rejects it; a naive checker that
   * accepts "gold appears in the answer" rewards it — the exploit the reward-hacking claim shows.
   */
  hedgeRate: number;
  /**
   * Most other digits a hedged list adds (1 to this many, uniform; default 3). Longer lists pass
   * a naive "gold appears in the answer" checker more often, so the exploit pays more.
   */
  hedgeMaxExtra?: number;
  /**
   * Probability of the verbose (overthinking) style: before the chain, the reasoning restates the
   * question (`<think>(3+5-9+2)%10,3+5=8,…`), as R1-style models re-read an easy problem before
   * solving it. The restatement writes no value, so the chain and the answer are the plain style's:
   * tokens that buy no accuracy, which a length penalty can remove for free. (A re-check restating
   * the *steps* after the chain was tried first: the model recomputed it, with its own slips, and
   * answered from it, so it cost accuracy and GRPO removed it without any penalty.) The verbose
   * writer is more careful (`verboseSlipRate`): without that the two styles were equally
   * accurate and unpenalized GRPO collapsed the 50/50 mix to one side at random (seed 1 kept 72%
   * verbose, seed 2 fell to 6%), so a length penalty had nothing to trade. Short and
   * verbose are exclusive (`shortRate + verboseRate` ≤ 1: one draw picks the style); 0 (the
   * default) draws exactly what the mix without it drew.
   */
  verboseRate?: number;
  /** Per-step slip probability of the verbose style (default: `slipRate`). */
  verboseSlipRate?: number;
};

/** One warm-start trace written in a style drawn by {@link TraceStyle}. */
export function solveStyled(
  problem: Pick<ModArithProblem, 'terms' | 'operators'>,
  rng: Rng,
  style: TraceStyle,
): string {
  const verboseRate = style.verboseRate ?? 0;
  // One draw picks the style (short, verbose or plain), and none when neither is on, so a mix
  // without verbose traces draws exactly the same stream as before the style existed.
  const draw = style.shortRate > 0 || verboseRate > 0 ? rng.next() : 1;
  const short = draw < style.shortRate;
  const verbose = !short && draw < style.shortRate + verboseRate;
  const slipRate = verbose ? (style.verboseSlipRate ?? style.slipRate) : style.slipRate;
  let text = solveWithSlips(problem, rng, slipRate);
  if (short) text = text.replace(/<think>.*<\/think>/, `${THINK_OPEN}${THINK_CLOSE}`);
  if (verbose) text = text.replace(THINK_OPEN, `${THINK_OPEN}${promptText(problem).slice(0, -1)},`);
  if (style.hedgeRate > 0 && rng.next() < style.hedgeRate) {
    const answer = /<answer>(\d)<\/answer>/.exec(text)![1]!;
    const digits = [answer];
    const extra = 1 + rng.nextInt(style.hedgeMaxExtra ?? 3);
    while (digits.length < extra + 1) {
      const digit = String(rng.nextInt(10));
      if (!digits.includes(digit)) digits.push(digit);
    }
    text = text.replace(/<answer>\d<\/answer>/, `${ANSWER_OPEN}${digits.join(',')}${ANSWER_CLOSE}`);
  }
  return text;
}

/** 1 when a completion's reasoning restates the question (the verbose style), else 0. */
export function restated(completion: string): number {
  const think = /<think>(.*?)<\/think>/s.exec(completion)?.[1] ?? '';
  return think.includes('(') ? 1 : 0;
}

/** The prompt of a problem: `(3+5-9+2)%10=`. */
export function promptText(problem: Pick<ModArithProblem, 'terms' | 'operators'>): string {
  const expression = problem.terms
    .map((term, index) => (index === 0 ? `${term}` : `${problem.operators[index - 1]}${term}`))
    .join('');
  return `(${expression})%10=`;
}

/** Number of operands of a prompt (its difficulty), e.g. 4 for `(3+5-9+2)%10=`. */
export function termsOf(prompt: string): number {
  return (prompt.match(/[+-]/g) ?? []).length + 1;
}

function drawProblem(rng: Rng, config: TaskConfig, id: string): ModArithProblem {
  const count = config.minTerms + rng.nextInt(config.maxTerms - config.minTerms + 1);
  const terms = Array.from({ length: count }, (_, index) =>
    index === 0 ? rng.nextInt(10) : 1 + rng.nextInt(config.termMax),
  );
  const operators = Array.from(
    { length: count - 1 },
    () => config.operators[rng.nextInt(config.operators.length)]!,
  );
  const values = runningValues({ terms, operators });
  return {
    id,
    prompt: promptText({ terms, operators }),
    answer: String(values.at(-1)),
    terms,
    operators,
  };
}

/** Validates a {@link TaskConfig}; throws `InvalidArgumentError` naming the field. */
export function validateTaskConfig(config: TaskConfig, functionName: string): TaskConfig {
  const minTerms = validateInteger(config.minTerms, {
    parameter: 'task.minTerms',
    functionName,
    min: 2,
    max: 16,
  });
  const maxTerms = validateInteger(config.maxTerms, {
    parameter: 'task.maxTerms',
    functionName,
    min: minTerms,
    max: 16,
  });
  if (
    !Array.isArray(config.operators) ||
    config.operators.length === 0 ||
    !config.operators.every((operator) => operator === '+' || operator === '-')
  ) {
    throw new InvalidArgumentError({
      parameter: 'task.operators',
      functionName,
      value: config.operators,
      expected: "a non-empty array of '+' and '-'",
    });
  }
  const termMax = validateInteger(config.termMax, {
    parameter: 'task.termMax',
    functionName,
    min: 1,
    max: 9,
  });
  return { minTerms, maxTerms, operators: [...config.operators], termMax };
}

/**
 * Disjoint train / eval splits drawn with a seed: no eval prompt appears in the training split.
 *
 * @example
 * ```ts
 * const { train, eval: held } = makeSplits({ minTerms: 3, maxTerms: 6, operators: ['+', '-'], termMax: 3 },
 *   { train: 2000, eval: 100, seed: 1 });
 * ```
 */
export function makeSplits(
  config: TaskConfig,
  sizes: { train: number; eval: number; seed: number },
): { train: ModArithProblem[]; eval: ModArithProblem[] } {
  const FN = 'makeSplits';
  const task = validateTaskConfig(config, FN);
  const trainSize = validateInteger(sizes.train, { parameter: 'train', functionName: FN, min: 1 });
  const evalSize = validateInteger(sizes.eval, { parameter: 'eval', functionName: FN, min: 1 });
  const rng = createRng(sizes.seed).derive('task');
  const seen = new Set<string>();
  const draw = (count: number, prefix: string) => {
    const out: ModArithProblem[] = [];
    let attempts = 0;
    while (out.length < count) {
      if (++attempts > count * 200) {
        throw new InvalidArgumentError({
          parameter: `${prefix}Size`,
          functionName: FN,
          value: count,
          expected: 'fewer problems than the task has distinct prompts',
        });
      }
      const problem = drawProblem(rng, task, `${prefix}-${out.length}`);
      if (seen.has(problem.prompt)) continue;
      seen.add(problem.prompt);
      out.push(problem);
    }
    return out;
  };
  const held = draw(evalSize, 'eval');
  return { train: draw(trainSize, 'train'), eval: held };
}

/**
 * The task tokenizer: one token per character of the alphabet plus the four R1 tags as single
 * tokens. The tags are added tokens that are *not* special, so decoding (which skips special
 * tokens such as EOS) keeps them in the text the verifiers see.
 */
export function buildTaskTokenizer(): TokenizerFiles {
  const files = buildCharTokenizer({
    characters: '0123456789+-=()%,',
    specialTokens: { additional: TAGS },
  });
  const json = structuredClone(files.json) as {
    added_tokens: { content: string; special: boolean }[];
  };
  for (const token of json.added_tokens) {
    if (TAGS.includes(token.content)) token.special = false;
  }
  const config = structuredClone(files.config ?? {}) as Record<string, unknown>;
  delete config.additional_special_tokens;
  return { json, config };
}
