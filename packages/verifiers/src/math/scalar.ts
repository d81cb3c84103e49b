/** One scalar answer (a number or an expression) and the parse context shared by the readers. Internal. */
import { type CompiledScalar, compileScalar } from './evaluate.js';
import { NotMathError } from './latex.js';

export type Scalar = {
  kind: 'scalar';
  /** Restricted-syntax text (numbers as placeholders). */
  expression: string;
  /** Written with a `%` sign: N% also matches N/100. */
  percent: boolean;
  compiled: CompiledScalar;
};

export type ParseOptions = {
  /** Max items in a set/list/tuple/matrix (bigger answers are rejected as too long). */
  maxItems: number;
};

/** What the structural readers share: the numeric literals of the converted text, options, depth. */
export type Context = { literals: string[]; options: ParseOptions; depth: number };

export function scalar(text: string, context: Context): Scalar {
  let expression = text.trim();
  let percent = false;
  if (expression.endsWith('%')) {
    percent = true;
    expression = expression.replace(/%+$/, '').trim();
  }
  if (expression.includes('%')) throw new NotMathError('stray %');
  if (expression === '') throw new NotMathError('empty');
  return {
    kind: 'scalar',
    expression,
    percent,
    compiled: compileScalar(expression, context.literals),
  };
}

/** A scalar for an exact rational (`p/q`), its integers added to the literals. */
export function rationalScalar(num: bigint, den: bigint, context: Context): Scalar {
  const index = context.literals.length;
  context.literals.push((num < 0n ? -num : num).toString(), den.toString());
  const sign = num < 0n ? '-' : '';
  const text = den === 1n ? `${sign}_c${index}` : `${sign}(_c${index} / _c${index + 1})`;
  return scalar(text, context);
}
