/** Low-level readers of LaTeX source for the converter (`latex.ts`): groups, arguments, splits. Internal. */
import { GREEK } from './latex-tables.js';

/** Thrown (internally) when a string is not something we can read as math. */
export class NotMathError extends Error {}

export function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

export function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** Reads a balanced `{…}` group starting at `start` (which holds `{`); returns content and end. */
export function readGroup(source: string, start: number): { content: string; end: number } {
  let depth = 0;
  for (let index = start; index < source.length; index++) {
    const char = source[index];
    if (char === '\\') {
      index++; // skip escaped char (e.g. \{ inside a group)
      continue;
    }
    if (char === '{') depth++;
    else if (char === '}') {
      depth--;
      if (depth === 0) return { content: source.slice(start + 1, index), end: index + 1 };
    }
  }
  throw new NotMathError('unbalanced braces');
}

/** Reads a balanced bracket `open…close` starting at `start`. */
export function readBalanced(
  source: string,
  start: number,
  open: string,
  close: string,
): { content: string; end: number } {
  let depth = 0;
  for (let index = start; index < source.length; index++) {
    const char = source[index];
    if (char === open) depth++;
    else if (char === close) {
      depth--;
      if (depth === 0) return { content: source.slice(start + 1, index), end: index + 1 };
    }
  }
  throw new NotMathError(`unbalanced ${open}${close}`);
}

export function skipSpaces(source: string, index: number): number {
  while (index < source.length && (source[index] === ' ' || source[index] === '\n')) index++;
  return index;
}

/**
 * Reads one LaTeX argument at `index`: a `{group}`, a `\command`, or a single character.
 * Returns the raw argument text (without braces).
 */
export function readArgument(source: string, index: number): { content: string; end: number } {
  index = skipSpaces(source, index);
  if (index >= source.length) throw new NotMathError('missing argument');
  const char = source[index]!;
  if (char === '{') return readGroup(source, index);
  if (char === '\\') {
    let end = index + 1;
    while (end < source.length && isLetter(source.charCodeAt(end))) end++;
    if (end === index + 1) end++;
    return { content: source.slice(index, end), end };
  }
  return { content: char, end: index + 1 };
}

/**
 * Reads the argument of a function written without parentheses (`\sin 2x`, `\sqrt 3`, `√x`):
 * a `{group}` / `(…)`, or a run of digits, letters and commands without spaces or operators.
 */
export function readAtomRun(source: string, index: number): { content: string; end: number } {
  index = skipSpaces(source, index);
  const char = source[index];
  if (char === '{') return readGroup(source, index);
  if (char === '(') return readBalanced(source, index, '(', ')');
  if (char === '\\') {
    // \tan\frac{\pi}{4}, \sin\sqrt{x}: the argument is one command with its arguments.
    let stop = index + 1;
    while (stop < source.length && isLetter(source.charCodeAt(stop))) stop++;
    const name = source.slice(index + 1, stop);
    const argumentCount =
      name === 'frac' || name === 'dfrac' || name === 'tfrac' ? 2 : name === 'sqrt' ? 1 : 0;
    if (argumentCount > 0) {
      let end = stop;
      for (let count = 0; count < argumentCount; count++) end = readArgument(source, end).end;
      return { content: source.slice(index, end), end };
    }
  }
  let end = index;
  while (end < source.length) {
    const code = source.charCodeAt(end);
    if (isDigit(code) || code === 46 /* . */) end++;
    else if (isLetter(code)) end++;
    else if (code === 92 /* \ */ && isLetter(source.charCodeAt(end + 1))) {
      // Only symbols continue the run (\sin 2\theta); a function or operator ends it (\sin x\cos x).
      let stop = end + 1;
      while (stop < source.length && isLetter(source.charCodeAt(stop))) stop++;
      const name = source.slice(end + 1, stop);
      if (!GREEK.has(name) && name !== 'pi') break;
      end = stop;
    } else break;
  }
  if (end === index) {
    if (index < source.length) return { content: source[index]!, end: index + 1 };
    throw new NotMathError('missing argument');
  }
  return { content: source.slice(index, end), end };
}

export function isIntegerLiteral(text: string): boolean {
  return /^\d+$/.test(text.trim());
}

/** Splits `source` at `separator` (`\\\\` or `&`) occurrences outside `{…}` groups. */
export function splitTopLevel(source: string, separator: '\\\\' | '&' | ','): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < source.length; index++) {
    const char = source[index];
    if (char === '\\') {
      if (separator === '\\\\' && depth === 0 && source[index + 1] === '\\') {
        parts.push(source.slice(start, index));
        start = index + 2;
      }
      index++; // an escape (\, \{ \&) is one unit
      continue;
    }
    if (char === '{') depth++;
    else if (char === '}') depth--;
    else if (depth === 0 && char === separator) {
      parts.push(source.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(source.slice(start));
  return parts;
}
