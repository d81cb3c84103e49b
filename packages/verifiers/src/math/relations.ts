/**
 * Relations in an answer: inequalities in one variable become intervals (`x > 3`, `-x > -1`,
 * `2x + 1 \le 7`, `1 < x \le 4`, `0 < f(x) < 1`), other chains of `<`/`≤` stay relations compared
 * term by term (`f(2) < f(1) < f(4)` ≡ `f(4) > f(1) > f(2)`), and `x ≠ 3` is a union of two open
 * intervals. Internal.
 */
import { compileScalar } from './evaluate.js';
import { NotMathError } from './latex.js';
import { div, equals, mul, type Rational, rational, sub } from './rational.js';
import { type Context, rationalScalar, type Scalar, scalar } from './scalar.js';
import type { MathValue } from './structure.js';

const VARIABLE = /^\s*[A-Za-z](?:_[A-Za-z0-9]+)?\s*$/;
/** `f(x)`: a quantity bounded like a variable (`0 < f(x) < 1`). */
const FUNCTION_OF_VARIABLE = /^\s*[A-Za-z]\s*\*?\s*\(\s*[A-Za-z](?:_[A-Za-z0-9]+)?\s*\)\s*$/;

type Op = '<' | '<=' | '>' | '>=';

const FLIP: Readonly<Record<Op, Op>> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

function isBound(text: string): boolean {
  return VARIABLE.test(text) || FUNCTION_OF_VARIABLE.test(text);
}

/** True when `text` has no free variable (a constant bound). */
function isConstant(text: string, context: Context): boolean {
  try {
    return compileScalar(text.trim(), context.literals).variables.length === 0;
  } catch {
    return false;
  }
}

function exactOf(text: string, context: Context): Rational | null {
  try {
    const compiled = compileScalar(text.trim(), context.literals);
    return compiled.variables.length === 0 ? compiled.exact : null;
  } catch {
    return null;
  }
}

/** `a·v + b` with exact a ≠ 0 and b, checked at three points, or null. */
function linearForm(text: string, context: Context): { slope: Rational; offset: Rational } | null {
  let variables: string[];
  try {
    variables = compileScalar(text.trim(), context.literals).variables;
  } catch {
    return null;
  }
  if (variables.length !== 1) return null;
  const name = variables[0]!;
  const symbol = new RegExp(`(?<![A-Za-z_\\d])${name}(?![A-Za-z_\\d])`, 'g');
  // `_c0 x` is a product: the value goes in as `*(k)` after an operand, `(k)` elsewhere
  const at = (value: number) =>
    exactOf(
      text.replace(symbol, (_name, offset: number) =>
        /[\w)]\s*$/.test(text.slice(0, offset)) ? `*(${value})` : `(${value})`,
      ),
      context,
    );
  const [f0, f1, f2] = [at(0), at(1), at(2)];
  if (!f0 || !f1 || !f2) return null;
  const slope = sub(f1, f0);
  const two = rational(2n);
  if (!slope || slope.num === 0n || !two) return null;
  const rise = sub(f2, f0);
  const expected = mul(slope, two);
  if (!rise || !expected || !equals(rise, expected)) return null;
  return { slope, offset: f0 };
}

function infinity(sign: '' | '-', context: Context): Scalar {
  return scalar(`${sign}Infinity`, context);
}

/** `v op bound` as an interval tuple. */
function ray(op: Op, bound: Scalar, context: Context): MathValue {
  const inclusive = op.endsWith('=');
  return op.startsWith('>')
    ? {
        kind: 'tuple',
        open: inclusive ? '[' : '(',
        close: ')',
        items: [bound, infinity('', context)],
      }
    : {
        kind: 'tuple',
        open: '(',
        close: inclusive ? ']' : ')',
        items: [infinity('-', context), bound],
      };
}

/** `side op constant` solved for the one variable of `side`, or null. */
function solve(side: string, op: Op, constant: string, context: Context): MathValue | null {
  if (!isConstant(constant, context)) return null;
  if (isBound(side)) return ray(op, scalar(constant, context), context);
  const linear = linearForm(side, context);
  const value = exactOf(constant, context);
  if (!linear || !value) return null;
  const shifted = sub(value, linear.offset);
  const bound = shifted && div(shifted, linear.slope);
  if (!bound) return null;
  const direction = linear.slope.num < 0n ? FLIP[op] : op;
  return ray(direction, rationalScalar(bound.num, bound.den, context), context);
}

/** `low op1 middle op2 high` with a variable (or `f(x)`) in the middle, as an interval. */
function between(parts: readonly string[], ops: readonly Op[], context: Context): MathValue | null {
  const [low, middle, high] = parts as [string, string, string];
  if (!isBound(middle) || !isConstant(low, context) || !isConstant(high, context)) return null;
  const ascending = ops[0]!.startsWith('<');
  const [lowText, highText, lowOp, highOp] = ascending
    ? [low, high, ops[0]!, ops[1]!]
    : [high, low, ops[1]!, ops[0]!];
  return {
    kind: 'tuple',
    open: lowOp.endsWith('=') ? '[' : '(',
    close: highOp.endsWith('=') ? ']' : ')',
    items: [scalar(lowText, context), scalar(highText, context)],
  };
}

/**
 * A relation written with `<`, `<=`, `>`, `>=`: an interval when it bounds one variable, else a
 * chain read in ascending order. Mixed directions (`a < b > c`) are not an answer.
 */
export function relation(text: string, context: Context): MathValue {
  const split = text.split(/(<=|>=|<|>)/);
  const parts = split.filter((_part, index) => index % 2 === 0);
  const ops = split.filter((_part, index) => index % 2 === 1) as Op[];
  const ascending = ops.every((op) => op.startsWith('<'));
  if (!ascending && !ops.every((op) => op.startsWith('>'))) {
    throw new NotMathError('relation in mixed directions');
  }
  if (parts.some((part) => part.trim() === '')) throw new NotMathError('relation without a side');
  if (parts.length === 2) {
    const [left, right] = parts as [string, string];
    const interval =
      solve(left, ops[0]!, right, context) ?? solve(right, FLIP[ops[0]!], left, context);
    if (interval) return interval;
  } else if (parts.length === 3) {
    const interval = between(parts, ops, context);
    if (interval) return interval;
  }
  const terms = parts.map((part) => scalar(part, context));
  const upward = (ascending ? ops : ops.reverse().map((op) => FLIP[op])) as ('<' | '<=')[];
  return { kind: 'relation', terms: ascending ? terms : terms.reverse(), ops: upward };
}

/** `x ≠ 3` → `(−∞, 3) ∪ (3, ∞)`, or null when neither side is a lone variable. */
export function exclusion(left: string, right: string, context: Context): MathValue | null {
  if (VARIABLE.test(left) === VARIABLE.test(right)) return null;
  const bound = () => scalar(VARIABLE.test(left) ? right : left, context);
  return {
    kind: 'union',
    items: [
      { kind: 'tuple', open: '(', close: ')', items: [infinity('-', context), bound()] },
      { kind: 'tuple', open: '(', close: ')', items: [bound(), infinity('', context)] },
    ],
  };
}
