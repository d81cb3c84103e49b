/**
 * LaTeX / plain-text answer → a restricted expression syntax that mathjs parses. Internal.
 *
 * Numbers are replaced by placeholder symbols (`_c0`, `_c1`, …) whose literal text is kept in a
 * table, so that exact rational arithmetic sees `0.1` and `123456789012345678901` exactly. Structure
 * that mathjs does not know is kept as marker characters for the structural parser
 * (`structure.ts`): `{ }` set braces, `⟦a,b;c,d⟧` matrices, `∪ ∩ ∈ ± ∓ ≈ ∅`, `⋁` ("or"),
 * `%`, relations `= != < <= > >=`.
 */

import {
  isDigit,
  isIntegerLiteral,
  isLetter,
  NotMathError,
  readArgument,
  readAtomRun,
  readBalanced,
  readGroup,
  skipSpaces,
  splitTopLevel,
} from './latex-read.js';
import {
  DROPPED,
  FUNCTIONS,
  GREEK,
  LATEX_FUNCTIONS,
  MATRIX_ENVIRONMENTS,
  SIMPLE,
  TEXT_COMMANDS,
  UNICODE,
  UNIT_WORDS,
} from './latex-tables.js';

export { NotMathError, splitTopLevel, UNIT_WORDS };

const MAX_DEPTH = 40;

export type Converted = {
  /** Expression in the restricted syntax (numbers as placeholders `_cN`). */
  text: string;
  /** Literal text of each numeric placeholder, by index. */
  literals: string[];
};

class Converter {
  readonly literals: string[] = [];

  convert(source: string, depth: number): string {
    if (depth > MAX_DEPTH) throw new NotMathError('nesting too deep');
    let out = '';
    /** Output position where the last integer literal placeholder starts, when it ends `out`. */
    let lastInteger: { position: number; literal: string } | null = null;
    let absOpen = false;
    let index = 0;
    const length = source.length;
    while (index < length) {
      const char = source[index]!;
      const code = source.charCodeAt(index);
      const before = out.length;
      if (char === '\\') {
        let end = index + 1;
        while (end < length && isLetter(source.charCodeAt(end))) end++;
        let name: string;
        if (end === index + 1) {
          name = source[index + 1] ?? '';
          end = index + 2;
        } else {
          name = source.slice(index + 1, end);
        }
        const result = this.command(name, source, end, depth, lastInteger, out);
        out = result.out;
        index = result.end;
        lastInteger = null;
        continue;
      }
      if (char === '{') {
        const group = readGroup(source, index);
        const inner = group.content.trim();
        // {-2021, 2021}: grouping braces around a list are the list (\{…\} is a set)
        const list = splitTopLevel(inner, ',').length > 1 && splitTopLevel(inner, '&').length === 1;
        if (inner !== '' && inner !== ',') {
          out += list
            ? `⦃${this.convert(inner, depth + 1)}⦄`
            : `(${this.convert(inner, depth + 1)})`;
        }
        index = group.end;
        lastInteger = null;
        continue;
      } else if (char === '}') {
        throw new NotMathError('unbalanced braces');
      } else if (char === '^') {
        const argument = readArgument(source, index + 1);
        const content = argument.content.trim();
        index = argument.end;
        if (content === '\\circ' || content === '\\degree' || content === 'o') {
          // degrees: 30^\circ → 30
        } else {
          out += `^(${this.convert(content, depth + 1)})`;
        }
        lastInteger = null;
        continue;
      } else if (char === '_') {
        const argument = readArgument(source, index + 1);
        index = argument.end;
        const suffix = argument.content.replace(/[^A-Za-z0-9]/g, '');
        // x_1, a_{37}, S_{MBCN} name variables of their own; a number's subscript (204_5) is dropped
        const base = out.replace(/\s+$/, '');
        if (/(?:^|[^A-Za-z0-9_])[A-Za-z]+$/.test(base) && suffix !== '') out = `${base}_${suffix} `;
        continue;
      } else if (isDigit(code) || (char === '.' && isDigit(source.charCodeAt(index + 1)))) {
        let end = index;
        while (end < length && isDigit(source.charCodeAt(end))) end++;
        if (source[end] === '.' && isDigit(source.charCodeAt(end + 1))) {
          end++;
          while (end < length && isDigit(source.charCodeAt(end))) end++;
        } else if (source[end] === '.' && end > index && !isDigit(source.charCodeAt(end + 1))) {
          // "5." → 5 (a trailing period is punctuation)
        }
        if (
          (source[end] === 'e' || source[end] === 'E') &&
          (isDigit(source.charCodeAt(end + 1)) ||
            ((source[end + 1] === '-' || source[end + 1] === '+') &&
              isDigit(source.charCodeAt(end + 2))))
        ) {
          end += 2;
          while (end < length && isDigit(source.charCodeAt(end))) end++;
        }
        const literal = source.slice(index, end);
        const position = out.length;
        out += ` _c${this.literals.length} `;
        this.literals.push(literal);
        index = end;
        lastInteger = /^\d+$/.test(literal) ? { position, literal } : null;
        if (source[skipSpaces(source, index)] === '(') out += '*';
        continue;
      } else if (isLetter(code)) {
        let end = index;
        while (end < length && isLetter(source.charCodeAt(end))) end++;
        const word = source.slice(index, end);
        index = end;
        out += this.word(word, source, index, depth, (consumed) => {
          index = consumed;
        });
        lastInteger = null;
        continue;
      } else if (char === '|') {
        out += absOpen ? ')' : ' abs(';
        absOpen = !absOpen;
      } else if ('+-*/()[],=<>!;%&'.includes(char)) {
        out += char;
        if (char === '!' && source[index + 1] === '=') {
          out += '=';
          index++;
        }
      } else if (char === ' ' || char === '\n' || char === '\t' || char === '~') {
        out += ' ';
        index++;
        continue;
      } else if (char === "'") {
        out += "'";
      } else if (char === ':') {
        out += ':';
      } else if (char === '$') {
        out += ' ';
      } else {
        const mapped = UNICODE[char];
        if (mapped === undefined) throw new NotMathError(`unexpected character ${char}`);
        if (char === '√') {
          const argument = readAtomRun(source, index + 1);
          out += ` sqrt(${this.convert(argument.content, depth + 1)})`;
          index = argument.end;
          lastInteger = null;
          continue;
        }
        out += mapped;
      }
      index++;
      if (out.length !== before) lastInteger = null;
    }
    if (absOpen) throw new NotMathError('unbalanced |');
    return out;
  }

  private word(
    word: string,
    source: string,
    index: number,
    depth: number,
    advance: (end: number) => void,
  ): string {
    const lower = word.toLowerCase();
    if (lower === 'or') return '⋁';
    if (lower === 'and') return ',';
    if (word === 'pi') return ' pi ';
    if (lower === 'inf' || lower === 'infty' || lower === 'infinity') return ' Infinity ';
    if (lower === 'sqrt' || (FUNCTIONS[lower] !== undefined && word === lower)) {
      return this.applyFunction(lower, source, index, depth, advance);
    }
    if (word.length > 1 && UNIT_WORDS.has(lower)) {
      advance(skipUnitPower(source, index));
      return ' ';
    }
    // A run of letters is a product of single-letter variables (xy → x y).
    let out = '';
    for (let position = 0; position < word.length; position++) out += ` ${word[position]}`;
    out += ' ';
    if (source[skipSpaces(source, index)] === '(') out += '*';
    return out;
  }

  /** Emits `name(arg)` (with an optional power: `\sin^2 x` → `(sin(x))^(2)`). */
  private applyFunction(
    name: string,
    source: string,
    index: number,
    depth: number,
    advance: (end: number) => void,
  ): string {
    const target = FUNCTIONS[name] ?? name;
    let power: string | null = null;
    let base: string | null = null;
    let position = skipSpaces(source, index);
    if (source[position] === '_' && (name === 'log' || name === 'lg')) {
      const argument = readArgument(source, position + 1);
      base = this.convert(argument.content, depth + 1);
      position = skipSpaces(source, argument.end);
    }
    if (source[position] === '^') {
      const argument = readArgument(source, position + 1);
      power = this.convert(argument.content, depth + 1);
      position = skipSpaces(source, argument.end);
    }
    if (position >= source.length) throw new NotMathError('function without argument');
    let argumentText: string;
    if (name === 'sqrt' && source[position] === '[') {
      const degree = readBalanced(source, position, '[', ']');
      const radicand = readArgument(source, degree.end);
      advance(radicand.end);
      return ` nthRoot(${this.convert(radicand.content, depth + 1)}, ${this.convert(degree.content, depth + 1)})`;
    }
    if (name === 'sqrt') {
      const argument =
        source[position] === '('
          ? readBalanced(source, position, '(', ')')
          : readArgument(source, position);
      argumentText = this.convert(argument.content, depth + 1);
      advance(argument.end);
    } else {
      const argument = readAtomRun(source, position);
      argumentText = this.convert(argument.content, depth + 1);
      advance(argument.end);
    }
    const call = base !== null ? ` log(${argumentText}, ${base})` : ` ${target}(${argumentText})`;
    return power !== null ? ` (${call})^(${power})` : call;
  }

  private command(
    name: string,
    source: string,
    end: number,
    depth: number,
    lastInteger: { position: number; literal: string } | null,
    out: string,
  ): { out: string; end: number } {
    if (name === 'frac' || name === 'dfrac' || name === 'tfrac' || name === 'cfrac') {
      const numerator = readArgument(source, end);
      const denominator = readArgument(source, numerator.end);
      const fraction = `((${this.convert(numerator.content, depth + 1)})/(${this.convert(denominator.content, depth + 1)}))`;
      // Mixed number: an integer immediately followed by \frac{int}{int} (2\frac{1}{2} = 5/2).
      if (
        lastInteger &&
        isIntegerLiteral(numerator.content) &&
        isIntegerLiteral(denominator.content) &&
        /^\s*_c\d+\s*$/.test(out.slice(lastInteger.position))
      ) {
        const whole = out.slice(lastInteger.position);
        return {
          out: `${out.slice(0, lastInteger.position)}(${whole}+${fraction})`,
          end: denominator.end,
        };
      }
      return { out: `${out} ${fraction}`, end: denominator.end };
    }
    if (name === 'binom' || name === 'dbinom' || name === 'tbinom') {
      const top = readArgument(source, end);
      const bottom = readArgument(source, top.end);
      return {
        out: `${out} combinations(${this.convert(top.content, depth + 1)}, ${this.convert(bottom.content, depth + 1)})`,
        end: bottom.end,
      };
    }
    if (name === 'sqrt' || LATEX_FUNCTIONS.has(name)) {
      let consumed = end;
      const text = this.applyFunction(name, source, end, depth, (position) => {
        consumed = position;
      });
      return { out: out + text, end: consumed };
    }
    if (name === 'operatorname') {
      const argument = readArgument(source, end);
      const fn = argument.content.trim();
      if (FUNCTIONS[fn] === undefined) throw new NotMathError(`unknown operator ${fn}`);
      let consumed = argument.end;
      const text = this.applyFunction(fn, source, argument.end, depth, (position) => {
        consumed = position;
      });
      return { out: out + text, end: consumed };
    }
    if (TEXT_COMMANDS.has(name)) {
      const argument = readArgument(source, end);
      const content = argument.content.trim();
      const lower = content.toLowerCase();
      if (content === '' || UNIT_WORDS.has(lower) || /^(?:sq\.?\s*)?units?$/.test(lower)) {
        return { out: `${out} `, end: skipUnitPower(source, argument.end) };
      }
      // \text{5.}: punctuation typed inside the text is not part of the value.
      const value = content.replace(/[.,;:!?]+$/, '').trim();
      if (value === '') return { out: `${out} `, end: argument.end };
      return { out: `${out} ${this.convert(value, depth + 1)} `, end: argument.end };
    }
    if (name === 'boxed' || name === 'fbox' || name === 'overline' || name === 'mathring') {
      const argument = readArgument(source, end);
      return { out: `${out}(${this.convert(argument.content, depth + 1)})`, end: argument.end };
    }
    if (name === 'begin') {
      return this.environment(source, end, depth, out);
    }
    if (DROPPED.has(name)) return { out, end };
    if (GREEK.has(name)) return { out: `${out} ${name.toLowerCase().replace(/^var/, '')} `, end };
    if (name === 'i' || name === 'imath') return { out: `${out} i `, end };
    if (name === 'e') return { out: `${out} e `, end };
    if (name === '\\') return { out: `${out};`, end }; // row break (only meaningful in matrices)
    const simple = SIMPLE[name];
    if (simple !== undefined) return { out: out + simple, end };
    // A missing space after a command (`\quadx`, `\cdotx`): the known command, then letters.
    for (let length = name.length - 1; length >= 2; length--) {
      const prefix = name.slice(0, length);
      if (isKnownCommand(prefix)) {
        return this.command(prefix, source, end - (name.length - length), depth, lastInteger, out);
      }
    }
    throw new NotMathError(`unknown command \\${name}`);
  }

  private environment(
    source: string,
    end: number,
    depth: number,
    out: string,
  ): { out: string; end: number } {
    const nameGroup = readArgument(source, end);
    const env = nameGroup.content.trim();
    if (!MATRIX_ENVIRONMENTS.has(env)) throw new NotMathError(`unknown environment ${env}`);
    let bodyStart = nameGroup.end;
    if (env === 'array') bodyStart = readArgument(source, bodyStart).end; // column spec
    // Find the matching \end{env}.
    const open = `\\begin{${env}}`;
    const close = `\\end{${env}}`;
    let level = 1;
    let cursor = bodyStart;
    let bodyEnd = -1;
    while (cursor < source.length) {
      const nextOpen = source.indexOf(open, cursor);
      const nextClose = source.indexOf(close, cursor);
      if (nextClose < 0) break;
      if (nextOpen >= 0 && nextOpen < nextClose) {
        level++;
        cursor = nextOpen + open.length;
      } else {
        level--;
        if (level === 0) {
          bodyEnd = nextClose;
          break;
        }
        cursor = nextClose + close.length;
      }
    }
    if (bodyEnd < 0) throw new NotMathError(`unterminated ${env}`);
    const body = source.slice(bodyStart, bodyEnd);
    const rows = splitTopLevel(body, '\\\\')
      .map((row) => row.trim())
      .filter((row) => row !== '' && !/^\\hline$/.test(row));
    const converted = rows.map((row) =>
      splitTopLevel(row.replace(/\\hline/g, ''), '&')
        .map((cell) => this.convert(cell.trim(), depth + 1))
        .join(','),
    );
    const matrix = `⟦${converted.join(';')}⟧`;
    const wrapped = env === 'vmatrix' || env === 'Vmatrix' ? ` det(${matrix})` : matrix;
    return { out: out + wrapped, end: bodyEnd + close.length };
  }
}

const STRUCTURAL_COMMANDS = new Set(['frac', 'dfrac', 'tfrac', 'cfrac', 'binom', 'sqrt', 'boxed']);

function isKnownCommand(name: string): boolean {
  return (
    SIMPLE[name] !== undefined ||
    DROPPED.has(name) ||
    GREEK.has(name) ||
    LATEX_FUNCTIONS.has(name) ||
    STRUCTURAL_COMMANDS.has(name)
  );
}

/**
 * Converts a (pre-cleaned) LaTeX or plain-text answer into the restricted syntax.
 * @throws {NotMathError} when the text contains something that is not math.
 */
export function latexToExpression(source: string): Converted {
  const converter = new Converter();
  const text = converter.convert(source, 0).replace(IMPLICIT_PRODUCT, '$1*(');
  return { text, literals: converter.literals };
}

/**
 * A number, a one-letter variable or `pi` followed by `(`: a product (`2\frac{x}{3}`,
 * `x\left(1+x\right)`), never a call (mathjs would read `x (1+x)` as calling `x`).
 */
const IMPLICIT_PRODUCT = /(_c\d+|(?<![A-Za-z_\d])[A-Za-z](?:_[A-Za-z0-9]+)?|\bpi)\s*\(/g;

/** After a unit (`\text{ cm}^2`, `5 m^3`), skips its power: it belongs to the unit, not the value. */
function skipUnitPower(source: string, end: number): number {
  const position = skipSpaces(source, end);
  if (source[position] !== '^') return end;
  const argument = readArgument(source, position + 1);
  return /^\s*[23]\s*$/.test(argument.content) ? argument.end : end;
}
