import {
  InvalidArgumentError,
  type Rng,
  type VerifyResult,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import { add, div, mul, type Rational, rational, sub } from '../math/rational.js';
import { readGeneratorOptions } from './generator-options.js';

/** A Countdown task: reach `target` with `numbers`, `+ − × ÷`, each number at most once. */
export type CountdownTask = {
  numbers: number[];
  target: number;
  /** 1 (easiest) … 5. */
  difficulty: number;
  /** One expression that reaches the target using every number (for reference / SFT). */
  solution: string;
  /** A ready-to-use prompt (TinyZero wording). */
  prompt: string;
};

/** Options of {@link generateCountdown}. */
export type CountdownGeneratorOptions = {
  /** Seed or an {@link Rng} from `@rlvr/core` (required: tasks are reproducible). */
  seed: number | string | Rng;
  /** 1 … 5 (default 3): more numbers, larger ranges, more operators. */
  difficulty?: number;
};

type Level = {
  count: number;
  max: number;
  ops: readonly Op[];
  targetMin: number;
  targetMax: number;
};
type Op = '+' | '-' | '*' | '/';

const LEVELS: readonly Level[] = [
  { count: 3, max: 10, ops: ['+', '-'], targetMin: 1, targetMax: 30 },
  { count: 3, max: 20, ops: ['+', '-', '*'], targetMin: 1, targetMax: 200 },
  { count: 4, max: 25, ops: ['+', '-', '*'], targetMin: 10, targetMax: 500 },
  { count: 4, max: 50, ops: ['+', '-', '*', '/'], targetMin: 10, targetMax: 999 },
  { count: 5, max: 100, ops: ['+', '-', '*', '/'], targetMin: 100, targetMax: 999 },
];

type Built = { value: number; text: string };

function combine(rng: Rng, a: Built, b: Built, ops: readonly Op[]): Built | null {
  const op = ops[rng.nextInt(ops.length)]!;
  switch (op) {
    case '+':
      return { value: a.value + b.value, text: `(${a.text} + ${b.text})` };
    case '-':
      return a.value > b.value
        ? { value: a.value - b.value, text: `(${a.text} - ${b.text})` }
        : b.value > a.value
          ? { value: b.value - a.value, text: `(${b.text} - ${a.text})` }
          : null;
    case '*':
      return { value: a.value * b.value, text: `${a.text} * ${b.text}` };
    case '/':
      if (b.value > 1 && a.value % b.value === 0)
        return { value: a.value / b.value, text: `${a.text} / ${b.text}` };
      if (a.value > 1 && b.value % a.value === 0)
        return { value: b.value / a.value, text: `${b.text} / ${a.text}` };
      return null;
  }
}

function stripOuter(text: string): string {
  if (!text.startsWith('(') || !text.endsWith(')')) return text;
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    if (text[index] === '(') depth++;
    else if (text[index] === ')') depth--;
    if (depth === 0 && index < text.length - 1) return text;
  }
  return text.slice(1, -1);
}

/**
 * Generates a Countdown task of graded difficulty from a seed: numbers are drawn, combined in a
 * random order with the level's operators (intermediate results stay positive integers), and the
 * result becomes the target, so every task has a solution that uses all numbers.
 *
 * | difficulty | numbers | range | operators | target |
 * |---|---|---|---|---|
 * | 1 | 3 | 1–10 | + − | 1–30 |
 * | 2 | 3 | 1–20 | + − × | 1–200 |
 * | 3 | 4 | 1–25 | + − × | 10–500 |
 * | 4 | 4 | 1–50 | + − × ÷ | 10–999 |
 * | 5 | 5 | 1–100 | + − × ÷ | 100–999 |
 *
 * @example
 * ```ts
 * const task = generateCountdown({ seed: 7, difficulty: 2 });
 * verifyCountdown(`<answer>${task.solution}</answer>`, task).score; // 1
 * ```
 * @throws {InvalidArgumentError} for a bad seed or difficulty.
 */
export function generateCountdown(options: CountdownGeneratorOptions): CountdownTask {
  const { difficulty, rng } = readGeneratorOptions(options, 'generateCountdown', 3);
  const level = LEVELS[difficulty - 1]!;
  for (;;) {
    const numbers = Array.from({ length: level.count }, () => 1 + rng.nextInt(level.max));
    const pool: Built[] = numbers.map((value) => ({ value, text: String(value) }));
    let ok = true;
    while (pool.length > 1) {
      const first = pool.splice(rng.nextInt(pool.length), 1)[0]!;
      const second = pool.splice(rng.nextInt(pool.length), 1)[0]!;
      const combined = combine(rng, first, second, level.ops);
      if (!combined) {
        ok = false;
        break;
      }
      pool.push(combined);
    }
    const result = pool[0]!;
    if (!ok || result.value < level.targetMin || result.value > level.targetMax) continue;
    const solution = stripOuter(result.text);
    const target = result.value;
    return {
      numbers,
      target,
      difficulty,
      solution,
      prompt:
        `Using the numbers [${numbers.join(', ')}], create an equation that equals ${target}. ` +
        'You can use basic arithmetic operations (+, -, *, /) and each number can only be used once. ' +
        'Show your work in <think> </think> tags. And return the final answer in <answer> </answer> tags, ' +
        'for example <answer> (1 + 2) / 3 </answer>.',
    };
  }
}

/** Options of {@link verifyCountdown}. */
export type CountdownVerifyOptions = {
  /** Require every number to be used (TinyZero's rule); default false (each at most once). */
  useAllNumbers?: boolean;
  /** Require every intermediate result to be an integer (classic Countdown); default false. */
  integerSteps?: boolean;
  /** Score for a well-formed expression with allowed numbers but the wrong value (default 0). */
  formatScore?: number;
};

/** Result of {@link verifyCountdown}. */
export type CountdownResult = VerifyResult & {
  score: number;
  correct: boolean;
  violations: string[];
};

type Token = { kind: 'number'; value: number; text: string } | { kind: 'op'; value: string };

const MAX_EXPRESSION = 500;

function tokenize(text: string): Token[] | null {
  const tokens: Token[] = [];
  let index = 0;
  while (index < text.length) {
    const char = text[index]!;
    if (char === ' ' || char === '\t') {
      index++;
    } else if (char >= '0' && char <= '9') {
      let end = index;
      while (end < text.length && text[end]! >= '0' && text[end]! <= '9') end++;
      if (text[end] === '.') return null; // decimals are not Countdown numbers
      const digits = text.slice(index, end);
      tokens.push({ kind: 'number', value: Number(digits), text: digits });
      index = end;
    } else if ('+-*/()'.includes(char)) {
      tokens.push({ kind: 'op', value: char });
      index++;
    } else if (char === '×' || char === '·' || char === 'x' || char === 'X') {
      tokens.push({ kind: 'op', value: '*' });
      index++;
    } else if (char === '÷') {
      tokens.push({ kind: 'op', value: '/' });
      index++;
    } else if (char === '−' || char === '–') {
      tokens.push({ kind: 'op', value: '-' });
      index++;
    } else {
      return null;
    }
  }
  return tokens;
}

type Evaluation = { value: Rational; integerSteps: boolean } | null;

/** Recursive-descent evaluation in exact rationals (no eval). Binary operators only. */
class Parser {
  private position = 0;
  readonly used: number[] = [];
  integerSteps = true;

  constructor(private readonly tokens: Token[]) {}

  parse(): Rational | null {
    const value = this.expression(0);
    return value && this.position === this.tokens.length ? value : null;
  }

  private peek(): Token | undefined {
    return this.tokens[this.position];
  }

  private step(value: Rational | null): Rational | null {
    if (value && value.den !== 1n) this.integerSteps = false;
    return value;
  }

  private expression(depth: number): Rational | null {
    let left = this.term(depth);
    for (
      let token = this.peek();
      left && token?.kind === 'op' && (token.value === '+' || token.value === '-');
      token = this.peek()
    ) {
      this.position++;
      const right = this.term(depth);
      if (!right) return null;
      left = this.step(token.value === '+' ? add(left, right) : sub(left, right));
    }
    return left;
  }

  private term(depth: number): Rational | null {
    let left = this.factor(depth);
    for (
      let token = this.peek();
      left && token?.kind === 'op' && (token.value === '*' || token.value === '/');
      token = this.peek()
    ) {
      this.position++;
      const right = this.factor(depth);
      if (!right) return null;
      left = this.step(token.value === '*' ? mul(left, right) : div(left, right));
    }
    return left;
  }

  private factor(depth: number): Rational | null {
    if (depth > 50) return null;
    const token = this.peek();
    if (!token) return null;
    if (token.kind === 'number') {
      this.position++;
      this.used.push(token.value);
      return rational(BigInt(token.text));
    }
    if (token.value === '(') {
      this.position++;
      const inner = this.expression(depth + 1);
      if (!inner || this.peek()?.value !== ')') return null;
      this.position++;
      return inner;
    }
    return null;
  }
}

function evaluateExpression(text: string): { evaluation: Evaluation; used: number[] } {
  const tokens = tokenize(text);
  if (!tokens || tokens.length === 0) return { evaluation: null, used: [] };
  const parser = new Parser(tokens);
  const value = parser.parse();
  return {
    evaluation: value ? { value, integerSteps: parser.integerSteps } : null,
    used: parser.used,
  };
}

/** The candidate expression: last `<answer>` content, else last `\boxed{}`, else last line with an operator. */
function extractExpression(response: string): string | null {
  const close = response.lastIndexOf('</answer>');
  const open = close >= 0 ? response.lastIndexOf('<answer>', close) : -1;
  let candidate: string | null = null;
  if (open >= 0) candidate = response.slice(open + 8, close);
  else {
    const box = response.lastIndexOf('\\boxed{');
    if (box >= 0) {
      const end = response.indexOf('}', box);
      if (end > box) candidate = response.slice(box + 7, end);
    }
  }
  if (candidate === null) {
    const lines = response
      .slice(-4 * MAX_EXPRESSION)
      .split('\n')
      .reverse();
    candidate = lines.find((line) => /\d\s*[-+*/×÷]\s*\(?\s*\d/.test(line)) ?? null;
  }
  if (candidate === null) return null;
  let text = candidate
    .replace(/\$/g, '')
    .replace(/\\times|\\cdot/g, '*')
    .replace(/\\div/g, '/');
  text = text.replace(/\\left|\\right/g, '').trim();
  // "expr = target" (or "target = expr"): keep the side with an operator.
  const sides = text
    .split('=')
    .map((side) => side.trim())
    .filter((side) => side !== '');
  if (sides.length > 1) text = sides.find((side) => /[-+*/×÷]/.test(side)) ?? sides[0]!;
  return text.trim();
}

/**
 * Verifies a Countdown answer without `eval`: extracts the expression (last `<answer>…</answer>`,
 * else last `\boxed{}`, else the last line with an operator; a trailing `= target` is ignored),
 * parses it (integers, `+ − × ÷`, parentheses; no unary minus, decimals or other symbols),
 * evaluates it in exact rationals, and checks that each number is one of the given numbers, used
 * at most as often as it is given (all of them with `useAllNumbers`).
 *
 * @example
 * ```ts
 * verifyCountdown('<answer>(6 - 2) * 5</answer>', { numbers: [2, 5, 6], target: 20 }).score; // 1
 * verifyCountdown('<answer>20</answer>', { numbers: [2, 5, 6], target: 20 }).violations; // ['number-not-allowed']
 * ```
 * @throws {InvalidArgumentError} for a malformed task (never for the response).
 */
export function verifyCountdown(
  response: string,
  task: Pick<CountdownTask, 'numbers' | 'target'>,
  options: CountdownVerifyOptions = {},
): CountdownResult {
  const start = performance.now();
  const functionName = 'verifyCountdown';
  validateOptions(options, {
    parameter: 'options',
    functionName,
    known: ['useAllNumbers', 'integerSteps', 'formatScore'],
  });
  if (typeof response !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'response',
      functionName,
      value: response,
      expected: 'a string',
    });
  }
  if (!task || !Array.isArray(task.numbers) || task.numbers.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'task.numbers',
      functionName,
      value: task?.numbers,
      expected: 'a non-empty array of integers',
    });
  }
  for (const [index, value] of task.numbers.entries()) {
    validateInteger(value, { parameter: `task.numbers[${index}]`, functionName, min: 0 });
  }
  validateInteger(task.target, { parameter: 'task.target', functionName });
  const formatScore =
    options.formatScore === undefined
      ? 0
      : validateNumber(options.formatScore, {
          parameter: 'options.formatScore',
          functionName,
          min: 0,
          max: 1,
        });
  const done = (
    score: number,
    reason: string,
    extracted: string | null,
    violations: string[],
  ): CountdownResult => ({
    score,
    correct: score === 1,
    extracted,
    reason,
    violations,
    timings: { totalMs: performance.now() - start },
  });
  const expression = extractExpression(response);
  if (expression === null || expression === '')
    return done(0, 'no expression found', null, ['no-expression']);
  if (expression.length > MAX_EXPRESSION)
    return done(0, 'expression too long', null, ['answer-too-long']);
  const { evaluation, used } = evaluateExpression(expression);
  if (!evaluation)
    return done(0, 'expression cannot be parsed or divides by zero', expression, ['unparsable']);
  const available = new Map<number, number>();
  for (const value of task.numbers) available.set(value, (available.get(value) ?? 0) + 1);
  const violations: string[] = [];
  for (const value of used) {
    const left = available.get(value);
    if (left === undefined) violations.push('number-not-allowed');
    else if (left === 0) violations.push('number-reused');
    else available.set(value, left - 1);
  }
  if (
    options.useAllNumbers &&
    [...available.values()].some((left) => left > 0) &&
    violations.length === 0
  ) {
    violations.push('not-all-numbers-used');
  }
  if (options.integerSteps && !evaluation.integerSteps) violations.push('non-integer-step');
  const unique = [...new Set(violations)];
  if (unique.length > 0)
    return done(0, `invalid use of numbers: ${unique.join(', ')}`, expression, unique);
  const value = evaluation.value;
  if (value.den === 1n && value.num === BigInt(task.target)) {
    return done(1, `reaches ${task.target}`, expression, []);
  }
  const shown = value.den === 1n ? value.num.toString() : `${value.num}/${value.den}`;
  return done(formatScore, `evaluates to ${shown}, not ${task.target}`, expression, [
    'wrong-value',
  ]);
}
