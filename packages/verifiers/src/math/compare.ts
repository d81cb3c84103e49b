/**
 * Equivalence of two parsed answers ({@link MathValue}). Symmetric. Internal.
 */
import { closeComplex, samplePointTable } from './evaluate.js';
import { div, equals, type Rational } from './rational.js';
import type { MathValue, Scalar } from './structure.js';

export type CompareOptions = {
  /** Relative tolerance when a decimal literal is involved (default 1e-6). */
  tolerance: number;
  /** Accept `N%` as `N/100` when a `%` sign is present (default true). */
  percent: boolean;
};

export const DEFAULT_COMPARE_OPTIONS: CompareOptions = { tolerance: 1e-6, percent: true };

/** Tolerance for expressions with no decimal literal: only float round-off is forgiven. */
const SYMBOLIC_TOLERANCE = 1e-9;
const ABSOLUTE_TOLERANCE = 1e-12;
const MIN_VALID_POINTS = 3;
const HUNDRED: Rational = { num: 100n, den: 1n };

type Variant = { scalar: Scalar; divideBy100: boolean };

function variants(value: Scalar, options: CompareOptions): Variant[] {
  const list: Variant[] = [{ scalar: value, divideBy100: false }];
  if (value.percent && options.percent) list.push({ scalar: value, divideBy100: true });
  return list;
}

function compareVariant(a: Variant, b: Variant, options: CompareOptions): boolean {
  const ca = a.scalar.compiled;
  const cb = b.scalar.compiled;
  const scaleA = a.divideBy100 ? 0.01 : 1;
  const scaleB = b.divideBy100 ? 0.01 : 1;
  if (ca.exact && cb.exact) {
    const exactA = a.divideBy100 ? div(ca.exact, HUNDRED) : ca.exact;
    const exactB = b.divideBy100 ? div(cb.exact, HUNDRED) : cb.exact;
    if (exactA && exactB) {
      if (equals(exactA, exactB)) return true;
      if (!ca.hasDecimal && !cb.hasDecimal) return false; // both exact, no decimal: different
      return withinRelative(exactA, exactB, options.tolerance);
    }
  }
  // The same expression (same literals, same variables) is the same value, even where floats
  // cannot evaluate it (`e^{1000}`, `x^{5000}`).
  if (a.divideBy100 === b.divideBy100 && ca.canonical === cb.canonical) return true;
  const relative = ca.hasDecimal || cb.hasDecimal ? options.tolerance : SYMBOLIC_TOLERANCE;
  const variables = [...new Set([...ca.variables, ...cb.variables])].sort();
  if (variables.length > 26) return false;
  const points = samplePointTable();
  const pointCount = variables.length === 0 ? 1 : points.length;
  let valid = 0;
  for (let point = 0; point < pointCount; point++) {
    const scope: Record<string, number> = {};
    const row = points[point]!;
    for (let index = 0; index < variables.length; index++) scope[variables[index]!] = row[index]!;
    const va = ca.evaluate(scope);
    const vb = cb.evaluate(scope);
    if (!va || !vb) continue;
    const x = { re: va.re * scaleA, im: va.im * scaleA };
    const y = { re: vb.re * scaleB, im: vb.im * scaleB };
    if (!closeComplex(x, y, relative, ABSOLUTE_TOLERANCE)) return false;
    valid++;
  }
  return valid >= (variables.length === 0 ? 1 : MIN_VALID_POINTS);
}

/**
 * |a − b| ≤ tolerance · max(|a|, |b|), in exact rationals (no absolute slack: `10^{-13}` ≢ `0`, and
 * no float overflow: `1.5e400` vs `1.5 \times 10^{400}` compare exactly).
 */
function withinRelative(a: Rational, b: Rational, tolerance: number): boolean {
  // Cross-multiplied (no gcd): |a − b| / |l| ≤ tolerance with l the larger in magnitude.
  const largest = abs(a.num * b.den) >= abs(b.num * a.den) ? a : b;
  if (largest.num === 0n) return false;
  const differenceNum = abs(a.num * b.den - b.num * a.den);
  const differenceDen = a.den * b.den;
  const scale = 2n ** 60n;
  const tolerant = BigInt(Math.round(tolerance * 2 ** 60));
  return differenceNum * largest.den * scale <= tolerant * differenceDen * abs(largest.num);
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}

function scalarsEqual(a: Scalar, b: Scalar, options: CompareOptions): boolean {
  for (const x of variants(a, options)) {
    for (const y of variants(b, options)) if (compareVariant(x, y, options)) return true;
  }
  return false;
}

/** `lhs − rhs` of two equations differ by a non-zero constant factor at every sample point. */
function equationsProportional(
  a: { lhs: Scalar; rhs: Scalar },
  b: { lhs: Scalar; rhs: Scalar },
): boolean {
  const variables = [
    ...new Set([
      ...a.lhs.compiled.variables,
      ...a.rhs.compiled.variables,
      ...b.lhs.compiled.variables,
      ...b.rhs.compiled.variables,
    ]),
  ].sort();
  if (variables.length === 0 || variables.length > 26) return false;
  const points = samplePointTable();
  let ratio: { re: number; im: number } | null = null;
  let valid = 0;
  for (const row of points) {
    const scope: Record<string, number> = {};
    for (let index = 0; index < variables.length; index++) scope[variables[index]!] = row[index]!;
    const values = [a.lhs, a.rhs, b.lhs, b.rhs].map((side) => side.compiled.evaluate(scope));
    if (
      values.some((value) => !value || !Number.isFinite(value.re) || !Number.isFinite(value.im))
    ) {
      continue;
    }
    const [al, ar, bl, br] = values as { re: number; im: number }[];
    const fa = { re: al!.re - ar!.re, im: al!.im - ar!.im };
    const fb = { re: bl!.re - br!.re, im: bl!.im - br!.im };
    const magnitudeA = Math.hypot(fa.re, fa.im);
    const magnitudeB = Math.hypot(fb.re, fb.im);
    const scale = Math.max(1, Math.hypot(al!.re, al!.im), Math.hypot(bl!.re, bl!.im));
    const zeroA = magnitudeA <= 1e-9 * scale;
    const zeroB = magnitudeB <= 1e-9 * scale;
    if (zeroA !== zeroB) return false;
    if (zeroA) continue;
    // fa / fb
    const denominator = fb.re * fb.re + fb.im * fb.im;
    const current = {
      re: (fa.re * fb.re + fa.im * fb.im) / denominator,
      im: (fa.im * fb.re - fa.re * fb.im) / denominator,
    };
    if (ratio === null) ratio = current;
    else if (!closeComplex(ratio, current, 1e-7, 1e-12)) return false;
    valid++;
  }
  return valid >= MIN_VALID_POINTS;
}

function unorderedEqual(
  a: readonly MathValue[],
  b: readonly MathValue[],
  options: CompareOptions,
): boolean {
  const left = dedupe(a, options);
  const right = dedupe(b, options);
  if (left.length !== right.length) return false;
  const used = new Array<boolean>(right.length).fill(false);
  outer: for (const item of left) {
    for (let index = 0; index < right.length; index++) {
      if (!used[index] && valuesEqual(item, right[index]!, options)) {
        used[index] = true;
        continue outer;
      }
    }
    return false;
  }
  return true;
}

function dedupe(values: readonly MathValue[], options: CompareOptions): MathValue[] {
  const kept: MathValue[] = [];
  for (const value of values) {
    if (!kept.some((other) => valuesEqual(other, value, options))) kept.push(value);
  }
  return kept;
}

function orderedEqual(
  a: readonly MathValue[],
  b: readonly MathValue[],
  options: CompareOptions,
): boolean {
  return a.length === b.length && a.every((item, index) => valuesEqual(item, b[index]!, options));
}

/** The value side of an assignment (`x = 3` → `3`), or null when `value` is not one. */
function assignedValue(value: MathValue): MathValue | null {
  return value.kind === 'equation' && value.lhsName !== null ? value.rhs : null;
}

function vectorItems(value: MathValue): MathValue[] | null {
  if (value.kind === 'tuple' && value.open === '(' && value.close === ')') return value.items;
  if (value.kind === 'matrix') {
    if (value.rows.length === 1) return value.rows[0]!;
    if (value.rows.every((row) => row.length === 1)) return value.rows.map((row) => row[0]!);
  }
  return null;
}

/** `2:4` ≡ `1:2` (exact non-zero parts in proportion); else part by part (`12:00`, `9:30`). */
function ratiosEqual(a: readonly MathValue[], b: readonly MathValue[], options: CompareOptions) {
  if (a.length !== b.length) return false;
  if (orderedEqual(a, b, options)) return true;
  const exact = (value: MathValue) =>
    value.kind === 'scalar' && value.compiled.exact && value.compiled.exact.num !== 0n
      ? value.compiled.exact
      : null;
  const left = a.map(exact);
  const right = b.map(exact);
  if (left.some((part) => part === null) || right.some((part) => part === null)) return false;
  const [a0, b0] = [left[0]!, right[0]!];
  return left.every((part, index) => {
    const other = right[index]!;
    return part!.num * other.den * b0.num * a0.den === other.num * part!.den * a0.num * b0.den;
  });
}

/** Symmetric equivalence of two parsed answers. */
export function valuesEqual(a: MathValue, b: MathValue, options: CompareOptions): boolean {
  if (a.kind === 'alternatives' || b.kind === 'alternatives') return false;
  if (a.kind === 'equation' && b.kind === 'equation') {
    if (a.lhsName !== null && a.lhsName === b.lhsName) return valuesEqual(a.rhs, b.rhs, options);
    if (
      a.lhs.kind === 'scalar' &&
      a.rhs.kind === 'scalar' &&
      b.lhs.kind === 'scalar' &&
      b.rhs.kind === 'scalar'
    ) {
      return equationsProportional({ lhs: a.lhs, rhs: a.rhs }, { lhs: b.lhs, rhs: b.rhs });
    }
    return false;
  }
  if (a.kind === 'equation' || b.kind === 'equation') {
    const [equation, other] = a.kind === 'equation' ? [a, b] : [b, a];
    const assigned = assignedValue(equation);
    return assigned !== null && valuesEqual(assigned, other, options);
  }
  if (a.kind === 'ratio' || b.kind === 'ratio') {
    return a.kind === 'ratio' && b.kind === 'ratio' && ratiosEqual(a.items, b.items, options);
  }
  if (a.kind === 'relation' || b.kind === 'relation') {
    return (
      a.kind === 'relation' &&
      b.kind === 'relation' &&
      a.ops.length === b.ops.length &&
      a.ops.every((op, index) => op === b.ops[index]) &&
      a.terms.every((term, index) => scalarsEqual(term, b.terms[index]!, options))
    );
  }
  // Lists whose items are assignments (x = 1, x = 2) compare by their values.
  if (a.kind === 'list' || b.kind === 'list') {
    const [list, other] = a.kind === 'list' ? [a, b] : [b, a];
    if (list.kind !== 'list') return false;
    if (other.kind === 'list' || other.kind === 'set') {
      return unorderedEqual(list.items, other.items, options);
    }
    if (other.kind === 'tuple' && other.open === '(' && other.close === ')') {
      return orderedEqual(list.items, other.items, options);
    }
    return false;
  }
  if (a.kind === 'scalar' && b.kind === 'scalar') return scalarsEqual(a, b, options);
  if (a.kind === 'set' && b.kind === 'set') return unorderedEqual(a.items, b.items, options);
  if (a.kind === 'set' || b.kind === 'set') {
    // {3} ≡ 3
    const [set, other] = a.kind === 'set' ? [a, b] : [b, a];
    return (
      set.kind === 'set' && set.items.length === 1 && valuesEqual(set.items[0]!, other, options)
    );
  }
  if (a.kind === 'tuple' && b.kind === 'tuple') {
    return a.open === b.open && a.close === b.close && orderedEqual(a.items, b.items, options);
  }
  if (a.kind === 'union' && b.kind === 'union') return unorderedEqual(a.items, b.items, options);
  if (a.kind === 'matrix' && b.kind === 'matrix') {
    return (
      a.rows.length === b.rows.length &&
      a.rows.every((row, index) => orderedEqual(row, b.rows[index]!, options))
    );
  }
  if (a.kind === 'matrix' || b.kind === 'matrix') {
    const left = vectorItems(a);
    const right = vectorItems(b);
    return left !== null && right !== null && orderedEqual(left, right, options);
  }
  if (a.kind === 'choice' && b.kind === 'choice') return a.letter === b.letter;
  if (a.kind === 'text' && b.kind === 'text') return a.text === b.text;
  return false;
}

/** Number of leaf values (for size checks). */
export function countLeaves(value: MathValue): number {
  switch (value.kind) {
    case 'scalar':
    case 'choice':
    case 'text':
      return 1;
    case 'equation':
      return countLeaves(value.lhs) + countLeaves(value.rhs);
    case 'matrix':
      return value.rows.reduce((sum, row) => sum + row.length, 0);
    case 'relation':
      return value.terms.length;
    default:
      return value.items.reduce((sum, item) => sum + countLeaves(item), 0);
  }
}
