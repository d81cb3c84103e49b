/**
 * Normalization and structural parsing of one extracted answer into a {@link MathValue}: numbers
 * and expressions, equations, tuples/intervals, sets, unions, matrices, multiple-choice letters,
 * and plain text. Internal.
 */
import { undouble } from './gold.js';
import { latexToExpression, NotMathError, UNIT_WORDS } from './latex.js';
import { precleanAnswer } from './preclean.js';
import { exclusion, relation } from './relations.js';
import { type Context, type ParseOptions, type Scalar, scalar } from './scalar.js';
import { normalizeUnicode } from './unicode.js';

export type { ParseOptions, Scalar };

export type MathValue =
  | Scalar
  | { kind: 'equation'; lhs: MathValue; rhs: MathValue; lhsName: string | null }
  | { kind: 'tuple'; open: '(' | '['; close: ')' | ']'; items: MathValue[] }
  | { kind: 'set'; items: MathValue[] }
  | { kind: 'list'; items: MathValue[] }
  | { kind: 'union'; items: MathValue[] }
  | { kind: 'matrix'; rows: MathValue[][] }
  | { kind: 'alternatives'; items: MathValue[] }
  /** `7:32`, `12:00`: components in order. */
  | { kind: 'ratio'; items: MathValue[] }
  /** `f(2) < f(1) < f(4)`, read in ascending order (`>` chains are reversed). */
  | { kind: 'relation'; terms: Scalar[]; ops: ('<' | '<=')[] }
  | { kind: 'choice'; letter: string }
  | { kind: 'text'; text: string };

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
const CHOICE_WITH_TEXT = /^(?:\(([A-J])\)|([A-J])(?:[).]|:(?![A-Za-z])))\s*\S/;
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
  const withoutEnvironments = text
    .replace(/\\(?:begin|end)\{[^{}]*\}(?:\{[^{}]*\})?/g, ' ')
    .replace(/_(?:\{[^{}]*\}|[A-Za-z0-9]+)/g, ' '); // subscripts name things: S_{MBCN}
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

const OPENERS = '([{⟦⦃';
const CLOSERS = ')]}⟧⦄';

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

/** The text with its numeric placeholders written out (`f(_c0)` → `f(2)`). */
function withLiterals(text: string, context: Context): string {
  return text.replace(/_c(\d+)/g, (_match, index: string) => context.literals[Number(index)] ?? '');
}

function semicolonItems(text: string, context: Context): MathValue[] {
  const parts = splitOutside(text, ';').map((part) => part.trim());
  if (parts.length > context.options.maxItems) throw new NotMathError('too many items');
  return parts
    .filter((part) => part !== '')
    .map((part) => structure(part, { ...context, depth: context.depth + 1 }));
}

function items(text: string, context: Context): MathValue[] {
  const split = splitOutside(text, ',').map((part) => part.trim());
  // "19, 46, and 82": the "and" after a comma is not an item of its own
  const parts = split.length > 1 ? split.filter((part) => part !== '') : split;
  if (parts.length > context.options.maxItems) throw new NotMathError('too many items');
  if (parts.length === 0 || (parts.length === 1 && parts[0] === '')) return [];
  return parts.map((part) => structure(part, { ...context, depth: context.depth + 1 }));
}

/** `x`, `x_1`, `f(x)`, `f(2)`, `f(-1)`: a name whose value the right side gives. */
const ASSIGNMENT_LHS =
  /^\s*(?:[A-Za-z](?:_[A-Za-z0-9]+)?|[A-Za-z]\s*\*?\s*\(\s*(?:[A-Za-z]|-?\s*_c\d+)\s*\))\s*$/;
const TUPLE_LHS = /^\s*\(\s*[A-Za-z](?:\s*,\s*[A-Za-z])+\s*\)\s*$/;
/**
 * A label: letters only, with subscripts, `|…|`, fraction bars and ratio colons (`|AB|`, `AB`,
 * `\frac{NO}{BO}`, `S_{MBCN}:S`, `V_1:V_2`) — what a gold names before giving a value.
 */
const LABEL_LHS = /^[\sA-Za-z_0-9()/:*]*$/;

function isLabel(text: string): boolean {
  const plain = text.replace(/\babs\(/g, '(');
  return (
    LABEL_LHS.test(plain) &&
    !/_c\d/.test(plain) &&
    /[A-Za-z]/.test(plain) &&
    !/(?:^|[^A-Za-z_0-9])[0-9]/.test(plain)
  );
}

/** True when no scalar inside `value` has a free variable. */
function isConstantValue(value: MathValue): boolean {
  switch (value.kind) {
    case 'scalar':
      return value.compiled.variables.length === 0;
    case 'tuple':
    case 'list':
    case 'set':
    case 'ratio':
      return value.items.every(isConstantValue);
    default:
      return false;
  }
}

/**
 * `lhs = rhs`, and chains `x = 5 + 5 + 1 = 11` (the first side names the last value) or
 * `48 + 24 = 72` (constants: the last side is the value).
 */
function equation(parts: readonly string[], context: Context): MathValue {
  const deeper = { ...context, depth: context.depth + 1 };
  const lhsText = parts[0]!.trim();
  const rhs = structure(parts[parts.length - 1]!, deeper);
  const named = ASSIGNMENT_LHS.test(lhsText) || TUPLE_LHS.test(lhsText);
  const name = () => withLiterals(lhsText, context).replace(/[\s*]/g, '');
  if (named) {
    const lhs = TUPLE_LHS.test(lhsText)
      ? ({ kind: 'text', text: lhsText } as MathValue)
      : structure(lhsText, deeper);
    return { kind: 'equation', lhs, rhs, lhsName: name() };
  }
  if (isLabel(lhsText) && isConstantValue(rhs)) {
    return { kind: 'equation', lhs: { kind: 'text', text: lhsText }, rhs, lhsName: name() };
  }
  const sides = parts.map((part, index) =>
    index === parts.length - 1 ? rhs : structure(part, deeper),
  );
  if (sides.every(isConstantValue)) return rhs;
  return { kind: 'equation', lhs: sides[sides.length - 2]!, rhs, lhsName: null };
}

/** A whole bracketed answer: set, matrix, tuple or interval, brace list, or a parenthesized value. */
function bracketed(trimmed: string, context: Context): MathValue | null {
  const first = trimmed[0]!;
  if (!OPENERS.includes(first) || closingIndex(trimmed) !== trimmed.length - 1) return null;
  const last = trimmed[trimmed.length - 1]!;
  const inner = trimmed.slice(1, -1);
  if (first === '{' && last === '}') return { kind: 'set', items: items(inner, context) };
  if (first === '⦃' && last === '⦄') return { kind: 'list', items: items(inner, context) };
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
    const separator = splitOutside(inner, ',').length >= 2 ? ',' : ';';
    const parts = splitOutside(inner, separator);
    if (parts.length >= 2) {
      if (parts.length > context.options.maxItems) throw new NotMathError('too many items');
      const values = parts.map((part) => structure(part, { ...context, depth: context.depth + 1 }));
      return { kind: 'tuple', open: first, close: last, items: values };
    }
    const body = inner.trim();
    // (…) groups; [⟦…⟧] is a matrix written \left[\begin{array}…\right]
    if (
      (first === '(' && last === ')') ||
      (body.startsWith('⟦') && closingIndex(body) === body.length - 1)
    ) {
      return structure(inner, context);
    }
  }
  return null;
}

function structure(text: string, context: Context): MathValue {
  if (context.depth > 12) throw new NotMathError('too deep');
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === '∅' || trimmed === '{}') {
    if (trimmed === '') throw new NotMathError('empty');
    return { kind: 'set', items: [] };
  }
  const deeper = { ...context, depth: context.depth + 1 };
  const alternatives = splitOutside(trimmed, '⋁');
  if (alternatives.length > 1) {
    return { kind: 'alternatives', items: alternatives.map((part) => structure(part, deeper)) };
  }
  const unionParts = splitOutside(trimmed, '∪');
  if (unionParts.length > 1) {
    if (unionParts.length > context.options.maxItems) throw new NotMathError('too many items');
    return { kind: 'union', items: unionParts.map((part) => structure(part, deeper)) };
  }
  const membership = splitOutside(trimmed, '∈');
  if (membership.length > 1) return structure(membership[membership.length - 1]!, context);
  const approx = splitOutside(trimmed, '≈');
  // x = 1/3 ≈ 0.33: the exact value; x ≈ 0.33: the approximation
  if (approx.length > 1)
    return structure(approx[0]!.includes('=') ? approx[0]! : approx.at(-1)!, context);
  for (const separator of [';', ',']) {
    if (splitOutside(trimmed, separator).length > 1) {
      const values = separator === ',' ? items(trimmed, context) : semicolonItems(trimmed, context);
      if (values.length === 0) throw new NotMathError('empty list');
      return { kind: 'list', items: values };
    }
  }
  const equalParts = splitOutside(trimmed, '=');
  // = inside <=, >=, != is not an equation
  if (equalParts.length > 1 && !equalParts.slice(0, -1).some((part) => /[<>!]$/.test(part))) {
    return equation(equalParts, context);
  }
  const unequal = trimmed.split('!=');
  if (unequal.length === 2) {
    const excluded = exclusion(unequal[0]!, unequal[1]!, context);
    if (excluded) return excluded;
    throw new NotMathError('relation');
  }
  if (/<|>/.test(trimmed) && !trimmed.includes('!=')) return relation(trimmed, context);
  const ratioParts = splitOutside(trimmed, ':');
  if (ratioParts.length > 1) {
    if (ratioParts.some((part) => part.trim() === '')) throw new NotMathError('empty ratio part');
    return { kind: 'ratio', items: ratioParts.map((part) => structure(part, deeper)) };
  }
  const grouped = bracketed(trimmed, context);
  if (grouped) return grouped;
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
  const cleaned = precleanAnswer(undouble(normalizeUnicode(raw)));
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
