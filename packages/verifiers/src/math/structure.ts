/**
 * Normalization and structural parsing of one extracted answer into a {@link MathValue}: numbers
 * and expressions, equations, tuples/intervals, sets, unions, matrices, multiple-choice letters,
 * and plain text. Internal.
 */
import { type CompiledScalar, compileScalar } from './evaluate.js';
import { latexToExpression, NotMathError, UNIT_WORDS } from './latex.js';
import { precleanAnswer } from './preclean.js';
import { normalizeUnicode } from './unicode.js';

export type Scalar = {
  kind: 'scalar';
  /** Restricted-syntax text (numbers as placeholders). */
  expression: string;
  /** Written with a `%` sign: N% also matches N/100. */
  percent: boolean;
  compiled: CompiledScalar;
};

export type MathValue =
  | Scalar
  | { kind: 'equation'; lhs: MathValue; rhs: MathValue; lhsName: string | null }
  | { kind: 'tuple'; open: '(' | '['; close: ')' | ']'; items: MathValue[] }
  | { kind: 'set'; items: MathValue[] }
  | { kind: 'list'; items: MathValue[] }
  | { kind: 'union'; items: MathValue[] }
  | { kind: 'matrix'; rows: MathValue[][] }
  | { kind: 'alternatives'; items: MathValue[] }
  | { kind: 'choice'; letter: string }
  | { kind: 'text'; text: string };

export type ParseOptions = {
  /** Max items in a set/list/tuple/matrix (bigger answers are rejected as too long). */
  maxItems: number;
};

export const DEFAULT_PARSE_OPTIONS: ParseOptions = { maxItems: 64 };

/** Words allowed in a math answer (anything else of 3+ letters makes it a text answer). */
const MATH_WORDS = new Set([
  'sqrt',
  'sin',
  'cos',
  'tan',
  'cot',
  'sec',
  'csc',
  'arcsin',
  'arccos',
  'arctan',
  'asin',
  'acos',
  'atan',
  'sinh',
  'cosh',
  'tanh',
  'log',
  'exp',
  'abs',
  'floor',
  'ceil',
  'gcd',
  'lcm',
  'max',
  'min',
  'inf',
  'infty',
  'infinity',
  'and',
  'frac',
  'dfrac',
  'tfrac',
  'text',
  'mathrm',
]);

const CHOICE_ONLY = /^\(?([A-J])\)?$/;
const CHOICE_WITH_TEXT = /^(?:\(([A-J])\)|([A-J])[).:])\s*\S/;
const CHOICE_PREFIXED = /^(?:option|choice|answer)\s*:?\s*\(?([A-J])\)?(?:$|[\s.:)])/i;
/** A second option letter in parentheses, or an "or"/"and" that joins alternatives. */
const ANOTHER_CHOICE = /\([A-J]\)|\bor\b|\band\s+\(?[A-J]\)?(?![A-Za-z])/;
const CHOICE_LIST =
  /^\(?[A-J]\)?(?:\s*(?:,|;|&|\/|\\?\bor\b|\band\b|\\text\{\s*(?:or|and)\s*\})\s*\(?[A-J]\)?)+$/;

function stripTextWrappers(text: string): string {
  let current = text;
  for (let guard = 0; guard < 4; guard++) {
    const next = current
      .replace(/\\(?:text|textbf|mathrm|mathbf|textit|mbox)\{([^{}]*)\}/g, '$1')
      .replace(/\*\*/g, '')
      .trim();
    if (next === current) break;
    current = next;
  }
  return current;
}

/** Multiple-choice reading: a letter, or several (a hedge unless the gold lists several). */
function parseChoice(text: string): MathValue | null {
  const plain = stripTextWrappers(text);
  const only = CHOICE_ONLY.exec(plain) ?? CHOICE_PREFIXED.exec(plain);
  if (only) return { kind: 'choice', letter: only[1]! };
  if (CHOICE_LIST.test(plain)) {
    const letters = plain.match(/(?<![A-Za-z\\])[A-J](?![A-Za-z])/g) ?? [];
    const isOr = /\bor\b/.test(plain);
    const items: MathValue[] = letters.map((letter) => ({ kind: 'choice', letter }));
    return isOr ? { kind: 'alternatives', items } : { kind: 'set', items };
  }
  const withText = CHOICE_WITH_TEXT.exec(plain);
  // "(A) 1/2" names one option; "(A) 1/2 or (B) 1/3" names two (not read as a choice).
  if (withText && !ANOTHER_CHOICE.test(plain.slice(withText[0].length - 1))) {
    return { kind: 'choice', letter: (withText[1] ?? withText[2])! };
  }
  return null;
}

/** True when the text has an English word that is not math (→ compare as text). */
export function hasProseWord(text: string): boolean {
  const withoutEnvironments = text.replace(/\\(?:begin|end)\{[^{}]*\}(?:\{[^{}]*\})?/g, ' ');
  for (const match of withoutEnvironments.matchAll(/(?<![\\A-Za-z])[A-Za-z]{3,}/g)) {
    const word = match[0].toLowerCase();
    if (!MATH_WORDS.has(word) && !UNIT_WORDS.has(word) && word !== 'or') return true;
  }
  return false;
}

export function normalizeText(text: string): string {
  return stripTextWrappers(text)
    .toLowerCase()
    .replace(/\\[a-z]+/g, ' ')
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

const OPENERS = '([{⟦';
const CLOSERS = ')]}⟧';

/** Splits at `separator` outside any brackets (bracket types are not matched: `[1, 2)` nests). */
function splitOutside(text: string, separator: string): string[] {
  if (!text.includes(separator)) return [text]; // the common case: no scan needed
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (OPENERS.includes(char)) depth++;
    else if (CLOSERS.includes(char)) depth--;
    else if (depth === 0 && text.startsWith(separator, index)) {
      parts.push(text.slice(start, index));
      index += separator.length - 1;
      start = index + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** Index of the bracket closing the one at 0, or -1. */
function closingIndex(text: string): number {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (OPENERS.includes(char)) depth++;
    else if (CLOSERS.includes(char)) {
      depth--;
      if (depth === 0) return index;
    }
  }
  return -1;
}

type Context = { literals: string[]; options: ParseOptions; depth: number };

function scalar(text: string, context: Context): MathValue {
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

/** Inequalities in one variable → an interval tuple (`x > 3` → `(3, ∞)`). */
function inequality(text: string, context: Context): MathValue | null {
  const parts = text.split(/(<=|>=|<|>)/);
  if (parts.length !== 3 && parts.length !== 5) return null;
  const isVariable = (part: string) => /^\s*[A-Za-z](?:_[A-Za-z0-9]+)?\s*$/.test(part);
  const infinity = (sign: string): MathValue => scalar(`${sign}Infinity`, context);
  if (parts.length === 3) {
    const [left, op, right] = parts as [string, string, string];
    let variableOnLeft: boolean;
    if (isVariable(left) && !isVariable(right)) variableOnLeft = true;
    else if (isVariable(right) && !isVariable(left)) variableOnLeft = false;
    else return null;
    const bound = scalar(variableOnLeft ? right : left, context);
    const greater = (op === '>' || op === '>=') === variableOnLeft; // variable > bound
    const inclusive = op.endsWith('=');
    return greater
      ? { kind: 'tuple', open: inclusive ? '[' : '(', close: ')', items: [bound, infinity('')] }
      : { kind: 'tuple', open: '(', close: inclusive ? ']' : ')', items: [infinity('-'), bound] };
  }
  const [low, op1, middle, op2, high] = parts as [string, string, string, string, string];
  if (!isVariable(middle)) return null;
  const ascending = op1.startsWith('<') && op2.startsWith('<');
  const descending = op1.startsWith('>') && op2.startsWith('>');
  if (!ascending && !descending) return null;
  const [lowText, highText, lowOp, highOp] = ascending
    ? [low, high, op1, op2]
    : [high, low, op2, op1];
  return {
    kind: 'tuple',
    open: lowOp.endsWith('=') ? '[' : '(',
    close: highOp.endsWith('=') ? ']' : ')',
    items: [scalar(lowText, context), scalar(highText, context)],
  };
}

/** `x ≠ 3` → `(−∞, 3) ∪ (3, ∞)`. */
function exclusion(left: string, right: string, context: Context): MathValue | null {
  const isVariable = (part: string) => /^\s*[A-Za-z](?:_[A-Za-z0-9]+)?\s*$/.test(part);
  if (isVariable(left) === isVariable(right)) return null;
  const bound = () => scalar(isVariable(left) ? right : left, context);
  const infinity = (sign: string) => scalar(`${sign}Infinity`, context);
  return {
    kind: 'union',
    items: [
      { kind: 'tuple', open: '(', close: ')', items: [infinity('-'), bound()] },
      { kind: 'tuple', open: '(', close: ')', items: [bound(), infinity('')] },
    ],
  };
}

/** The text with its numeric placeholders written out (`f(_c0)` → `f(2)`). */
function withLiterals(text: string, context: Context): string {
  return text.replace(/_c(\d+)/g, (_match, index: string) => context.literals[Number(index)] ?? '');
}

function items(text: string, context: Context): MathValue[] {
  const parts = splitOutside(text, ',').map((part) => part.trim());
  if (parts.length > context.options.maxItems) throw new NotMathError('too many items');
  if (parts.length === 1 && parts[0] === '') return [];
  return parts.map((part) => structure(part, { ...context, depth: context.depth + 1 }));
}

/** `x`, `x_1`, `f(x)`, `f(2)`, `f(-1)`: a name whose value the right side gives. */
const ASSIGNMENT_LHS =
  /^\s*(?:[A-Za-z](?:_[A-Za-z0-9]+)?|[A-Za-z]\s*\*?\s*\(\s*(?:[A-Za-z]|-?\s*_c\d+)\s*\))\s*$/;
const TUPLE_LHS = /^\s*\(\s*[A-Za-z](?:\s*,\s*[A-Za-z])+\s*\)\s*$/;

function structure(text: string, context: Context): MathValue {
  if (context.depth > 12) throw new NotMathError('too deep');
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === '∅' || trimmed === '{}') {
    if (trimmed === '') throw new NotMathError('empty');
    return { kind: 'set', items: [] };
  }
  const alternatives = splitOutside(trimmed, '⋁');
  if (alternatives.length > 1) {
    return {
      kind: 'alternatives',
      items: alternatives.map((part) => structure(part, { ...context, depth: context.depth + 1 })),
    };
  }
  const unionParts = splitOutside(trimmed, '∪');
  if (unionParts.length > 1) {
    if (unionParts.length > context.options.maxItems) throw new NotMathError('too many items');
    return {
      kind: 'union',
      items: unionParts.map((part) => structure(part, { ...context, depth: context.depth + 1 })),
    };
  }
  const membership = splitOutside(trimmed, '∈');
  if (membership.length > 1) return structure(membership[membership.length - 1]!, context);
  const approx = splitOutside(trimmed, '≈');
  if (approx.length > 1) return structure(approx[approx.length - 1]!, context);
  const commaParts = splitOutside(trimmed, ',');
  if (commaParts.length > 1) {
    const values = items(trimmed, context);
    if (values.length === 0) throw new NotMathError('empty list');
    return { kind: 'list', items: values };
  }
  const equalParts = splitOutside(trimmed, '=');
  if (equalParts.length > 1 && !/[<>!]$/.test(equalParts[0]!)) {
    // Relations written with = inside <=, >=, != were split wrongly: rejoin those cases.
    if (!equalParts.some((_part, index) => index > 0 && /[<>!]$/.test(equalParts[index - 1]!))) {
      const lhsText = equalParts.slice(0, -1).join('=').trim();
      const rhsText = equalParts[equalParts.length - 1]!;
      const rhs = structure(rhsText, { ...context, depth: context.depth + 1 });
      if (equalParts.length > 2) {
        // a = b = 3: keep the last two sides
        const lhs = structure(equalParts[equalParts.length - 2]!, {
          ...context,
          depth: context.depth + 1,
        });
        return { kind: 'equation', lhs, rhs, lhsName: null };
      }
      const isName = ASSIGNMENT_LHS.test(lhsText) || TUPLE_LHS.test(lhsText);
      const lhs = TUPLE_LHS.test(lhsText)
        ? ({ kind: 'text', text: lhsText } as MathValue)
        : structure(lhsText, { ...context, depth: context.depth + 1 });
      return {
        kind: 'equation',
        lhs,
        rhs,
        lhsName: isName ? withLiterals(lhsText, context).replace(/[\s*]/g, '') : null,
      };
    }
  }
  const unequal = trimmed.split('!=');
  if (unequal.length === 2) {
    const excluded = exclusion(unequal[0]!, unequal[1]!, context);
    if (excluded) return excluded;
    throw new NotMathError('relation');
  }
  if (/<|>/.test(trimmed) && !trimmed.includes('!=')) {
    const interval = inequality(trimmed, context);
    if (interval) return interval;
    throw new NotMathError('relation');
  }
  const first = trimmed[0]!;
  if (OPENERS.includes(first) && closingIndex(trimmed) === trimmed.length - 1) {
    const last = trimmed[trimmed.length - 1]!;
    const inner = trimmed.slice(1, -1);
    if (first === '{' && last === '}') return { kind: 'set', items: items(inner, context) };
    if (first === '⟦' && last === '⟧') {
      const rows = splitOutside(inner, ';').map((row) => items(row, context));
      const width = rows[0]?.length ?? 0;
      if (width === 0 || rows.some((row) => row.length !== width)) {
        throw new NotMathError('ragged matrix');
      }
      if (rows.length * width > context.options.maxItems) throw new NotMathError('too many');
      return { kind: 'matrix', rows };
    }
    if ((first === '(' || first === '[') && (last === ')' || last === ']')) {
      const parts = splitOutside(inner, ',');
      if (parts.length >= 2) {
        return {
          kind: 'tuple',
          open: first,
          close: last,
          items: items(inner, context),
        };
      }
      if (first === '(' && last === ')') return structure(inner, context);
    }
  }
  const plusMinus = /[±∓]/.exec(trimmed);
  if (plusMinus) {
    const index = plusMinus.index;
    const head = trimmed.slice(0, index);
    const tail = trimmed.slice(index + 1);
    const plus = plusMinus[0] === '±' ? '+' : '-';
    const minus = plusMinus[0] === '±' ? '-' : '+';
    return {
      kind: 'set',
      items: [
        structure(`${head}${plus}${tail}`, { ...context, depth: context.depth + 1 }),
        structure(`${head}${minus}${tail}`, { ...context, depth: context.depth + 1 }),
      ],
    };
  }
  return scalar(trimmed, context);
}

/**
 * Reads an extracted answer. Returns `{ value }` or `{ error }` when it cannot be read as math or
 * text (e.g. unbalanced LaTeX).
 */
export function parseAnswer(
  raw: string,
  options: ParseOptions = DEFAULT_PARSE_OPTIONS,
): { value: MathValue; cleaned: string } | { error: string; cleaned: string } {
  const cleaned = precleanAnswer(normalizeUnicode(raw));
  if (cleaned === '') return { error: 'empty answer', cleaned };
  const choice = parseChoice(cleaned);
  if (choice) return { value: choice, cleaned };
  if (hasProseWord(cleaned)) {
    const text = normalizeText(cleaned);
    if (text === '') return { error: 'empty answer', cleaned };
    return { value: { kind: 'text', text }, cleaned };
  }
  try {
    const converted = latexToExpression(cleaned);
    const value = structure(converted.text, {
      literals: converted.literals,
      options,
      depth: 0,
    });
    return { value, cleaned };
  } catch (error) {
    if (error instanceof NotMathError || error instanceof RangeError) {
      return { error: `cannot read answer as math: ${error.message}`, cleaned };
    }
    throw error;
  }
}
