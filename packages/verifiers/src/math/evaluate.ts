/**
 * Scalar expressions: parsing the restricted syntax with mathjs, validating the tree against a
 * whitelist, exact rational evaluation, and complex-valued numeric evaluation. Internal.
 *
 * mathjs is loaded from its single-file bundle (`mathjs/lib/browser/math.js`), which loads in
 * ~75 ms instead of ~700 ms for the many-module build.
 */
import { createRng } from '@rlvr/core';
import mathjsBundle from 'mathjs/lib/browser/math.js';
import { NotMathError } from './latex.js';
import {
  add,
  div,
  mul,
  neg,
  parseDecimal,
  pow,
  type Rational,
  rational,
  sub,
  toNumber,
} from './rational.js';

type Complex = { re: number; im: number };

// biome-ignore lint/suspicious/noExplicitAny: the mathjs bundle is untyped; we use a few functions.
const math = mathjsBundle as any;

/** A parsed mathjs node (we read only these fields). */
type MathNode = {
  type: string;
  name?: string;
  fn?: string | MathNode;
  op?: string;
  args?: MathNode[];
  content?: MathNode;
  value?: unknown;
  implicit?: boolean;
};

/** A scalar ready to compare: exact value when it has one, numeric evaluation otherwise. */
export type CompiledScalar = {
  /** Exact rational value, if the expression is built from numbers with + − × ÷ and integer powers. */
  exact: Rational | null;
  /** Free variables (sorted). */
  variables: string[];
  /** True when a literal was written with a decimal point (tolerance applies). */
  hasDecimal: boolean;
  /**
   * Evaluates at a point; null for an undefined value (division by zero, domain error) and for a
   * value outside the float range (`10^{309}`, `e^{-1000}`): those never compare as ∞ or 0.
   */
  evaluate(scope: Readonly<Record<string, number>>): Complex | null;
  /** The expression with literals written out and no spaces: equal texts are equal values. */
  canonical: string;
};

const CONSTANTS = new Set(['pi', 'e', 'i', 'Infinity']);

const UNARY_FUNCTIONS: Readonly<Record<string, (value: unknown) => unknown>> = {
  sqrt: (x) => math.sqrt(x),
  sin: (x) => math.sin(x),
  cos: (x) => math.cos(x),
  tan: (x) => math.tan(x),
  cot: (x) => math.cot(x),
  sec: (x) => math.sec(x),
  csc: (x) => math.csc(x),
  asin: (x) => math.asin(x),
  acos: (x) => math.acos(x),
  atan: (x) => math.atan(x),
  sinh: (x) => math.sinh(x),
  cosh: (x) => math.cosh(x),
  tanh: (x) => math.tanh(x),
  log: (x) => math.log(x),
  log10: (x) => math.log10(x),
  exp: (x) => math.exp(x),
  abs: (x) => math.abs(x),
  floor: (x) => math.floor(x),
  ceil: (x) => math.ceil(x),
};

const MAX_FACTORIAL_EXACT = 1000;
const MAX_BINOMIAL_STEPS = 2000;

function realNumber(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (value && typeof value === 'object' && 're' in value && 'im' in value) {
    const complex = value as Complex;
    return Math.abs(complex.im) <= 1e-12 * Math.max(1, Math.abs(complex.re)) ? complex.re : null;
  }
  return null;
}

function binomial(nValue: unknown, kValue: unknown): number {
  const n = realNumber(nValue);
  const k = realNumber(kValue);
  if (n === null || k === null || !Number.isInteger(n) || !Number.isInteger(k)) return Number.NaN;
  if (k < 0 || k > n) return 0;
  const steps = Math.min(k, n - k);
  if (steps > MAX_BINOMIAL_STEPS) return Number.POSITIVE_INFINITY;
  let result = 1;
  for (let index = 1; index <= steps; index++) result = (result * (n - steps + index)) / index;
  return Math.round(result);
}

function factorialNumber(value: unknown): unknown {
  const n = realNumber(value);
  if (n === null) return Number.NaN;
  if (n > 171) return Number.POSITIVE_INFINITY;
  return math.factorial(n);
}

/** Validates a mathjs tree against the whitelist and collects its variables. */
function validate(node: MathNode, variables: Set<string>, literals: readonly string[]): void {
  switch (node.type) {
    case 'ConstantNode':
      if (typeof node.value !== 'number') throw new NotMathError('non-numeric constant');
      return;
    case 'SymbolNode': {
      const name = node.name ?? '';
      if (/^_c\d+$/.test(name)) {
        if (literals[Number(name.slice(2))] === undefined) throw new NotMathError('bad literal');
        return;
      }
      if (CONSTANTS.has(name)) return;
      if (!/^[A-Za-z][A-Za-z]*(?:_[A-Za-z0-9]+)?$/.test(name) || name in UNARY_FUNCTIONS) {
        throw new NotMathError(`symbol ${name}`);
      }
      variables.add(name);
      return;
    }
    case 'ParenthesisNode':
      validate(node.content!, variables, literals);
      return;
    case 'OperatorNode': {
      const fn = node.fn as string;
      const args = node.args ?? [];
      const arity: Record<string, number> = {
        add: 2,
        subtract: 2,
        multiply: 2,
        divide: 2,
        pow: 2,
        unaryMinus: 1,
        unaryPlus: 1,
        factorial: 1,
      };
      if (arity[fn] !== args.length) throw new NotMathError(`operator ${fn}`);
      for (const arg of args) validate(arg, variables, literals);
      return;
    }
    case 'FunctionNode': {
      const fnNode = node.fn as MathNode;
      const name = fnNode?.type === 'SymbolNode' ? fnNode.name! : '';
      const args = node.args ?? [];
      const ok =
        (name in UNARY_FUNCTIONS && args.length === 1) ||
        ((name === 'nthRoot' || name === 'combinations') && args.length === 2) ||
        (name === 'log' && args.length === 2) ||
        ((name === 'gcd' || name === 'lcm' || name === 'max' || name === 'min') &&
          args.length >= 1 &&
          args.length <= 16);
      if (!ok) throw new NotMathError(`function ${name}`);
      for (const arg of args) validate(arg, variables, literals);
      return;
    }
    default:
      throw new NotMathError(`node ${node.type}`);
  }
}

function literalValue(node: MathNode, literals: readonly string[]): Rational | null {
  return parseDecimal(literals[Number(node.name!.slice(2))]!)?.value ?? null;
}

/** Exact rational value of a validated tree, or null. */
function exactValue(node: MathNode, literals: readonly string[]): Rational | null {
  switch (node.type) {
    case 'ConstantNode':
      return Number.isInteger(node.value) ? rational(BigInt(node.value as number)) : null;
    case 'SymbolNode':
      return /^_c\d+$/.test(node.name!) ? literalValue(node, literals) : null;
    case 'ParenthesisNode':
      return exactValue(node.content!, literals);
    case 'OperatorNode': {
      const args = node.args!;
      const a = exactValue(args[0]!, literals);
      if (!a) return null;
      if (node.fn === 'unaryMinus') return neg(a);
      if (node.fn === 'unaryPlus') return a;
      if (node.fn === 'factorial') {
        if (a.den !== 1n || a.num < 0n || a.num > BigInt(MAX_FACTORIAL_EXACT)) return null;
        let product = 1n;
        for (let k = 2n; k <= a.num; k++) product *= k;
        return rational(product);
      }
      const b = exactValue(args[1]!, literals);
      if (!b) return null;
      switch (node.fn) {
        case 'add':
          return add(a, b);
        case 'subtract':
          return sub(a, b);
        case 'multiply':
          return mul(a, b);
        case 'divide':
          return div(a, b);
        case 'pow':
          return pow(a, b);
        default:
          return null;
      }
    }
    case 'FunctionNode': {
      const name = (node.fn as MathNode).name;
      if (name === 'combinations') {
        const n = exactValue(node.args![0]!, literals);
        const k = exactValue(node.args![1]!, literals);
        if (!n || !k || n.den !== 1n || k.den !== 1n || k.num < 0n || k.num > n.num) return null;
        // biome-ignore lint/complexity/useMathMinMax: bigint operands (Math.min takes numbers)
        const steps = k.num < n.num - k.num ? k.num : n.num - k.num;
        if (steps > BigInt(MAX_BINOMIAL_STEPS)) return null;
        let result = 1n;
        for (let index = 1n; index <= steps; index++) {
          result = (result * (n.num - steps + index)) / index;
        }
        return rational(result);
      }
      if (name === 'abs') {
        const value = exactValue(node.args![0]!, literals);
        return value && value.num < 0n ? neg(value) : value;
      }
      return null;
    }
    default:
      return null;
  }
}

function toComplex(value: unknown): Complex | null {
  if (typeof value === 'number') return Number.isNaN(value) ? null : { re: value, im: 0 };
  if (value && typeof value === 'object' && 're' in value && 'im' in value) {
    const { re, im } = value as Complex;
    if (Number.isNaN(re) || Number.isNaN(im)) return null;
    return { re, im };
  }
  return null;
}

/** Thrown when a float result left the float range (overflow to ±∞ or underflow to 0). */
class FloatRangeError extends Error {}

function isFiniteValue(value: unknown): boolean {
  const complex = toComplex(value);
  return complex !== null && Number.isFinite(complex.re) && Number.isFinite(complex.im);
}

function isNonZeroFinite(value: unknown): boolean {
  const complex = toComplex(value);
  return isFiniteValue(value) && (complex!.re !== 0 || complex!.im !== 0);
}

/**
 * Checks a float result against its arguments: non-finite from finite arguments is an overflow
 * (`2^{5000}`, `1/0`); zero from non-zero finite arguments of a product, quotient, power or
 * exponential is an underflow (`0.1^{400}`). Either throws {@link FloatRangeError}.
 */
function inRange(result: unknown, args: readonly unknown[], canUnderflow: boolean): unknown {
  const value = toComplex(result);
  if (value === null) return result;
  if (!Number.isFinite(value.re) || !Number.isFinite(value.im)) {
    if (args.every(isFiniteValue)) throw new FloatRangeError('overflow');
  } else if (canUnderflow && value.re === 0 && value.im === 0 && args.every(isNonZeroFinite)) {
    throw new FloatRangeError('underflow');
  }
  return result;
}

/** A literal's float value; a literal beyond the float range (`1e400`, `1e-400`) throws. */
function literalNumber(literal: string): number {
  const value = Number(literal);
  if (!Number.isFinite(value) || (value === 0 && /[1-9]/.test(literal.split(/[eE]/)[0]!))) {
    throw new FloatRangeError('literal');
  }
  return value;
}

/**
 * A negative real base with an exact exponent p/q, q odd (`x^{2/3}` at x < 0): the real root, as
 * `\\sqrt[3]{x}^2` gives it (the principal complex power would differ). Null otherwise.
 */
function realPower(
  node: MathNode,
  args: readonly unknown[],
  literals: readonly string[],
): number | null {
  const base = realNumber(args[0]);
  if (base === null || base >= 0) return null;
  const exponent = exactValue(node.args![1]!, literals);
  if (!exponent || exponent.den === 1n || exponent.den % 2n === 0n) return null;
  const magnitude = (-base) ** (Number(exponent.num) / Number(exponent.den));
  return exponent.num % 2n === 0n ? magnitude : -magnitude;
}

/** Numeric (complex) value of a validated tree at `scope`. Throws on domain errors. */
function numericValue(
  node: MathNode,
  scope: Readonly<Record<string, number>>,
  literals: readonly string[],
): unknown {
  switch (node.type) {
    case 'ConstantNode':
      return node.value;
    case 'SymbolNode': {
      const name = node.name!;
      if (/^_c\d+$/.test(name)) return literalNumber(literals[Number(name.slice(2))]!);
      if (name === 'pi') return Math.PI;
      if (name === 'e') return Math.E;
      if (name === 'i') return math.complex(0, 1);
      if (name === 'Infinity') return Number.POSITIVE_INFINITY;
      return scope[name] ?? Number.NaN;
    }
    case 'ParenthesisNode':
      return numericValue(node.content!, scope, literals);
    case 'OperatorNode': {
      const args = node.args!.map((arg) => numericValue(arg, scope, literals));
      switch (node.fn) {
        case 'add':
          return inRange(math.add(args[0], args[1]), args, false);
        case 'subtract':
          return inRange(math.subtract(args[0], args[1]), args, false);
        case 'multiply':
          return inRange(math.multiply(args[0], args[1]), args, true);
        case 'divide':
          return inRange(math.divide(args[0], args[1]), args, true);
        case 'pow':
          return inRange(realPower(node, args, literals) ?? math.pow(args[0], args[1]), args, true);
        case 'unaryMinus':
          return math.unaryMinus(args[0]);
        case 'unaryPlus':
          return args[0];
        case 'factorial':
          return inRange(factorialNumber(args[0]), args, false);
        default:
          return Number.NaN;
      }
    }
    case 'FunctionNode': {
      const name = (node.fn as MathNode).name!;
      const args = node.args!.map((arg) => numericValue(arg, scope, literals));
      const unary = UNARY_FUNCTIONS[name];
      if (unary && args.length === 1) return inRange(unary(args[0]), args, name === 'exp');
      if (name === 'combinations') return inRange(binomial(args[0], args[1]), args, false);
      if (name === 'nthRoot') {
        const radicand = realNumber(args[0]);
        const degree = realNumber(args[1]);
        if (radicand !== null && degree !== null && Number.isInteger(degree)) {
          return math.nthRoot(radicand, degree);
        }
        return math.pow(args[0], math.divide(1, args[1]));
      }
      if (name === 'log') return math.divide(math.log(args[0]), math.log(args[1]));
      if (name === 'max' || name === 'min') {
        const values = args.map(realNumber);
        if (values.some((value) => value === null)) return Number.NaN;
        return name === 'max'
          ? Math.max(...(values as number[]))
          : Math.min(...(values as number[]));
      }
      return math[name](...args);
    }
    default:
      return Number.NaN;
  }
}

const MAX_EXPRESSION_LENGTH = 4000;

/**
 * Parses and validates a scalar in the restricted syntax.
 * @throws {NotMathError} when mathjs cannot parse it or it uses something outside the whitelist.
 */
export function compileScalar(text: string, literals: readonly string[]): CompiledScalar {
  if (text.length > MAX_EXPRESSION_LENGTH) throw new NotMathError('expression too long');
  const single = /^\s*_c(\d+)\s*$/.exec(text);
  if (single) {
    const literal = literals[Number(single[1])]!;
    const parsed = parseDecimal(literal);
    let value: Complex | null;
    try {
      value = { re: literalNumber(literal), im: 0 };
    } catch {
      value = null;
    }
    return {
      exact: parsed?.value ?? null,
      variables: [],
      hasDecimal: literal.includes('.'),
      evaluate: () => value,
      canonical: literal,
    };
  }
  let node: MathNode;
  try {
    node = math.parse(text) as MathNode;
  } catch (error) {
    throw new NotMathError(`mathjs: ${(error as Error).message}`);
  }
  const variableSet = new Set<string>();
  validate(node, variableSet, literals);
  let hasDecimal = false;
  for (const match of text.matchAll(/_c(\d+)/g)) {
    if (literals[Number(match[1])]?.includes('.')) hasDecimal = true;
  }
  let canonical: string | undefined;
  return {
    exact: exactValue(node, literals),
    variables: [...variableSet].sort(),
    hasDecimal,
    get canonical() {
      canonical ??= text
        .replace(/_c(\d+)/g, (_match, index: string) => `{${literals[Number(index)]}}`)
        .replace(/\s+/g, '');
      return canonical;
    },
    evaluate(scope) {
      try {
        return toComplex(numericValue(node, scope, literals));
      } catch {
        return null;
      }
    },
  };
}

/** Deterministic sample points: `SAMPLE_POINTS[p][v]` is variable v's value at point p. */
const POINT_COUNT = 8;
const MAX_VARIABLES = 26;
let samplePoints: number[][] | null = null;

export function samplePointTable(): number[][] {
  if (!samplePoints) {
    const rng = createRng('rlvr-math-sample-points');
    samplePoints = [];
    for (let point = 0; point < POINT_COUNT; point++) {
      const row: number[] = [];
      for (let variable = 0; variable < MAX_VARIABLES; variable++) {
        // |value| in [0.3, 2.8], random sign, never an integer
        const magnitude = 0.3 + rng.next() * 2.5;
        row.push(rng.next() < 0.35 ? -magnitude : magnitude);
      }
      samplePoints.push(row);
    }
  }
  return samplePoints;
}

export function complexAbs(value: Complex): number {
  return Math.hypot(value.re, value.im);
}

/** True when two complex values agree within `relative` (plus `absolute` near zero). */
export function closeComplex(a: Complex, b: Complex, relative: number, absolute: number): boolean {
  const aFinite = Number.isFinite(a.re) && Number.isFinite(a.im);
  const bFinite = Number.isFinite(b.re) && Number.isFinite(b.im);
  if (!aFinite || !bFinite) {
    return !aFinite && !bFinite && a.re === b.re && Math.abs(a.im) < 1e-9 && Math.abs(b.im) < 1e-9;
  }
  const difference = Math.hypot(a.re - b.re, a.im - b.im);
  return difference <= absolute + relative * Math.max(complexAbs(a), complexAbs(b));
}

export { toNumber };
