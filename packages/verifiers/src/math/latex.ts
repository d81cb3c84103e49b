/**
 * LaTeX / plain-text answer → a restricted expression syntax that mathjs parses. Internal.
 *
 * Numbers are replaced by placeholder symbols (`_c0`, `_c1`, …) whose literal text is kept in a
 * table, so that exact rational arithmetic sees `0.1` and `123456789012345678901` exactly. Structure
 * that mathjs does not know is kept as marker characters for the structural parser
 * (`structure.ts`): `{ }` set braces, `⟦a,b;c,d⟧` matrices, `∪ ∩ ∈ ± ∓ ≈ ∅`, `⋁` ("or"),
 * `%`, relations `= != < <= > >=`.
 */

/** Thrown (internally) when a string is not something we can read as math. */
export class NotMathError extends Error {}

/** Unit and filler words dropped from answers (`5 \text{ cm}`, `12 dollars`). Lower case. */
export const UNIT_WORDS: ReadonlySet<string> = new Set(
  [
    'cm',
    'mm',
    'km',
    'm',
    'meter',
    'meters',
    'metre',
    'metres',
    'centimeter',
    'centimeters',
    'millimeter',
    'millimeters',
    'kilometer',
    'kilometers',
    'in',
    'inch',
    'inches',
    'ft',
    'foot',
    'feet',
    'yd',
    'yard',
    'yards',
    'mi',
    'mile',
    'miles',
    'mph',
    'kmh',
    'g',
    'gram',
    'grams',
    'kg',
    'kilogram',
    'kilograms',
    'mg',
    'lb',
    'lbs',
    'pound',
    'pounds',
    'oz',
    'ounce',
    'ounces',
    'ton',
    'tons',
    'l',
    'liter',
    'liters',
    'litre',
    'litres',
    'ml',
    'gallon',
    'gallons',
    'quart',
    'quarts',
    'cup',
    'cups',
    's',
    'sec',
    'second',
    'seconds',
    'min',
    'mins',
    'minute',
    'minutes',
    'h',
    'hr',
    'hrs',
    'hour',
    'hours',
    'day',
    'days',
    'week',
    'weeks',
    'month',
    'months',
    'year',
    'years',
    'dollar',
    'dollars',
    'cent',
    'cents',
    'usd',
    'euro',
    'euros',
    'degree',
    'degrees',
    'deg',
    'radian',
    'radians',
    'rad',
    'unit',
    'units',
    'sq',
    'square',
    'cubic',
    'percent',
    'points',
    'point',
    'people',
    'persons',
    'students',
    'times',
    'ways',
    'items',
    'pieces',
  ].filter((word) => word.length > 1), // single letters are variables, never units
);

/** Function names accepted in answers, mapped to the evaluator's names. */
const FUNCTIONS: Readonly<Record<string, string>> = {
  sqrt: 'sqrt',
  sin: 'sin',
  cos: 'cos',
  tan: 'tan',
  cot: 'cot',
  sec: 'sec',
  csc: 'csc',
  arcsin: 'asin',
  arccos: 'acos',
  arctan: 'atan',
  asin: 'asin',
  acos: 'acos',
  atan: 'atan',
  sinh: 'sinh',
  cosh: 'cosh',
  tanh: 'tanh',
  ln: 'log',
  log: 'log10',
  lg: 'log10',
  exp: 'exp',
  abs: 'abs',
  floor: 'floor',
  ceil: 'ceil',
  det: 'det',
  gcd: 'gcd',
  lcm: 'lcm',
  max: 'max',
  min: 'min',
};

/** Functions written as LaTeX commands that take a parenthesized or single-atom argument. */
const LATEX_FUNCTIONS = new Set(Object.keys(FUNCTIONS));

const GREEK = new Set([
  'alpha',
  'beta',
  'gamma',
  'delta',
  'epsilon',
  'varepsilon',
  'zeta',
  'eta',
  'theta',
  'vartheta',
  'iota',
  'kappa',
  'lambda',
  'mu',
  'nu',
  'xi',
  'rho',
  'sigma',
  'tau',
  'upsilon',
  'phi',
  'varphi',
  'chi',
  'psi',
  'omega',
  'Gamma',
  'Delta',
  'Theta',
  'Lambda',
  'Xi',
  'Sigma',
  'Phi',
  'Psi',
  'Omega',
]);

/** Commands that are dropped (spacing, sizing, style wrappers handled as transparent). */
const DROPPED = new Set([
  'left',
  'right',
  'big',
  'Big',
  'bigg',
  'Bigg',
  'bigl',
  'bigr',
  'Bigl',
  'Bigr',
  'biggl',
  'biggr',
  'displaystyle',
  'textstyle',
  'scriptstyle',
  'limits',
  'nolimits',
  'quad',
  'qquad',
  'hfill',
  'middle',
  'cdotp',
  'relax',
  'vphantom',
  'hphantom',
  'phantom',
  'strut',
  'mathstrut',
]);

const TEXT_COMMANDS = new Set([
  'text',
  'textbf',
  'textit',
  'textrm',
  'textsf',
  'texttt',
  'textnormal',
  'mathrm',
  'mathbf',
  'mathit',
  'mathsf',
  'mathtt',
  'mbox',
  'hbox',
  'textup',
  'emph',
  'mathnormal',
  'bm',
  'boldsymbol',
  'mathbb',
  'mathcal',
  'rm',
  'bf',
]);

const SIMPLE: Readonly<Record<string, string>> = {
  pi: ' pi ',
  infty: ' Infinity ',
  infinity: ' Infinity ',
  cdot: '*',
  times: '*',
  ast: '*',
  div: '/',
  pm: '±',
  mp: '∓',
  le: '<=',
  leq: '<=',
  leqslant: '<=',
  ge: '>=',
  geq: '>=',
  geqslant: '>=',
  lt: '<',
  gt: '>',
  ne: '!=',
  neq: '!=',
  approx: '≈',
  simeq: '≈',
  cup: '∪',
  cap: '∩',
  in: '∈',
  emptyset: '∅',
  varnothing: '∅',
  circ: '',
  degree: '',
  lor: '⋁',
  vee: '⋁',
  lfloor: ' floor(',
  rfloor: ')',
  lceil: ' ceil(',
  rceil: ')',
  cdots: '…',
  ldots: '…',
  dots: '…',
  infin: ' Infinity ',
  to: '→',
  rightarrow: '→',
  implies: '→',
  Rightarrow: '→',
  colon: ':',
  mid: '|',
  vert: '|',
  lvert: '|',
  rvert: '|',
  prime: "'",
  '%': '%',
  $: '',
  '{': '{',
  '}': '}',
  ',': ' ',
  ';': ' ',
  ':': ' ',
  '!': '',
  ' ': ' ',
  '|': '|',
  '&': '&',
  '#': '',
  _: '_',
};

const UNICODE: Readonly<Record<string, string>> = {
  '−': '-',
  '–': '-',
  '—': '-',
  '×': '*',
  '·': '*',
  '⋅': '*',
  '∗': '*',
  '÷': '/',
  π: ' pi ',
  '∞': ' Infinity ',
  '≤': '<=',
  '≥': '>=',
  '⩽': '<=',
  '⩾': '>=',
  '≠': '!=',
  '≈': '≈',
  '∪': '∪',
  '∩': '∩',
  '∈': '∈',
  '∅': '∅',
  '°': '',
  '±': '±',
  '∓': '∓',
  '½': '(1/2)',
  '⅓': '(1/3)',
  '⅔': '(2/3)',
  '¼': '(1/4)',
  '¾': '(3/4)',
  '²': '^2',
  '³': '^3',
  '′': "'",
  '\u00a0': ' ',
  '\u2009': ' ',
  '\u202f': ' ',
  '…': '…',
  '√': 'sqrt',
};

const MATRIX_ENVIRONMENTS = new Set([
  'pmatrix',
  'bmatrix',
  'Bmatrix',
  'vmatrix',
  'Vmatrix',
  'matrix',
  'smallmatrix',
  'array',
]);

const MAX_DEPTH = 40;

export type Converted = {
  /** Expression in the restricted syntax (numbers as placeholders `_cN`). */
  text: string;
  /** Literal text of each numeric placeholder, by index. */
  literals: string[];
};

function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** Reads a balanced `{…}` group starting at `start` (which holds `{`); returns content and end. */
function readGroup(source: string, start: number): { content: string; end: number } {
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
function readBalanced(
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

function skipSpaces(source: string, index: number): number {
  while (index < source.length && (source[index] === ' ' || source[index] === '\n')) index++;
  return index;
}

/**
 * Reads one LaTeX argument at `index`: a `{group}`, a `\command`, or a single character.
 * Returns the raw argument text (without braces).
 */
function readArgument(source: string, index: number): { content: string; end: number } {
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
function readAtomRun(source: string, index: number): { content: string; end: number } {
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

function isIntegerLiteral(text: string): boolean {
  return /^\d+$/.test(text.trim());
}

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
        if (inner !== '' && inner !== ',') out += `(${this.convert(inner, depth + 1)})`;
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
        if (/[A-Za-z0-9]$/.test(out) && suffix !== '') out += `_${suffix}`;
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
    if (word.length > 1 && UNIT_WORDS.has(lower)) return ' ';
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
        return { out: `${out} `, end: argument.end };
      }
      return { out: `${out} ${this.convert(content, depth + 1)} `, end: argument.end };
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

/** Splits `source` at `separator` (`\\\\` or `&`) occurrences outside `{…}` groups. */
export function splitTopLevel(source: string, separator: '\\\\' | '&'): string[] {
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

/**
 * Converts a (pre-cleaned) LaTeX or plain-text answer into the restricted syntax.
 * @throws {NotMathError} when the text contains something that is not math.
 */
export function latexToExpression(source: string): Converted {
  const converter = new Converter();
  const text = converter.convert(source, 0);
  return { text, literals: converter.literals };
}
