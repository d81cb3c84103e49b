import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CORPUS } from './__fixtures__/conformance-corpus.js';
import { verifyMath } from './verify-math.js';

/** Accuracy reported in the README; the corpus must never fall below it. */
const REPORTED_ACCURACY = 1;

describe('verifyMath conformance corpus', () => {
  it('should have at least 250 cases covering every category, correct and incorrect', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(250);
    const categories = new Set(CORPUS.map(([category]) => category));
    for (const category of [
      'extraction',
      'normalization',
      'rational',
      'symbolic',
      'interval',
      'sets-tuples',
      'matrix',
      'choice',
      'infinity',
      'complex',
      'equation',
      'percent',
      'text',
      'hedging',
      'bad-gold',
    ]) {
      expect(categories.has(category)).toBe(true);
    }
    expect(CORPUS.filter((item) => item[3] === 1).length).toBeGreaterThan(100);
    expect(CORPUS.filter((item) => item[3] === 0).length).toBeGreaterThan(80);
  });

  it(`should score at least ${REPORTED_ACCURACY * 100}% of the corpus as expected`, () => {
    const failures: string[] = [];
    for (const [category, response, gold, expected] of CORPUS) {
      const result = verifyMath(response, gold);
      if (result.score !== expected) {
        failures.push(
          `${category}: ${response.slice(0, 60)} | ${gold} → ${result.score} (${result.reason})`,
        );
      }
    }
    const accuracy = 1 - failures.length / CORPUS.length;
    expect(failures).toEqual(accuracy >= REPORTED_ACCURACY ? failures : []);
    expect(accuracy).toBeGreaterThanOrEqual(REPORTED_ACCURACY);
  });
});

describe('verifyMath', () => {
  it('should return a structured result with timings', () => {
    const result = verifyMath('so \\boxed{\\dfrac12}', '0.5');
    expect(result).toMatchObject({
      score: 1,
      correct: true,
      extracted: '\\dfrac12',
      source: 'boxed',
      violations: [],
    });
    expect(result.timings.totalMs).toBeGreaterThanOrEqual(0);
    expect(result.timings.totalMs).toBeGreaterThanOrEqual(result.timings.extractMs);
  });

  it('should accept a numeric gold', () => {
    expect(verifyMath('#### 72', 72).score).toBe(1);
    expect(verifyMath('#### 0.5', 0.5).score).toBe(1);
  });

  it('should give null (not applicable), never 1, for an unparsable gold', () => {
    for (const gold of ['\\frac{1}{', '', '$$', '\\foo{2}', '1 or 2']) {
      const result = verifyMath('\\boxed{\\frac{1}{}', gold);
      expect(result.score).toBeNull();
      expect(result.correct).toBe(false);
    }
  });

  it('should honour options: fallback, multipleAnswers, tolerance, percent', () => {
    expect(verifyMath('I think 12', '12').score).toBe(1);
    expect(verifyMath('I think 12', '12', { fallback: 'none' }).score).toBe(0);
    expect(verifyMath('\\boxed{1}, \\boxed{2}', '2').score).toBe(0);
    expect(verifyMath('\\boxed{1}, \\boxed{2}', '2', { multipleAnswers: 'last' }).score).toBe(1);
    expect(verifyMath('\\boxed{0.333}', '1/3', { tolerance: 1e-2 }).score).toBe(1);
    expect(verifyMath('\\boxed{25\\%}', '0.25', { percent: false }).score).toBe(0);
    expect(verifyMath('\\boxed{123}', '123', { maxAnswerLength: 2 }).violations).toEqual([
      'answer-too-long',
    ]);
  });

  it('should reject invalid arguments with typed errors naming the parameter', () => {
    expect(() => verifyMath(42 as unknown as string, '1')).toThrow(/'response'/);
    expect(() => verifyMath('1', Number.NaN)).toThrow(/'gold'/);
    expect(() => verifyMath('1', '1', { tolerance: -1 })).toThrow(/'options.tolerance'/);
    expect(() => verifyMath('1', '1', { fallback: 'x' as 'none' })).toThrow(/'options.fallback'/);
    expect(() => verifyMath('1', '1', { maxItems: 0 })).toThrow(/'options.maxItems'/);
  });
});

describe('verifyMath adversarial probes (reward hacking)', () => {
  const probes: [string, string, string, string][] = [
    ['two boxes', '\\boxed{1} or \\boxed{2}', '1', 'hedged'],
    ['or inside the box', '\\boxed{1 \\text{ or } 2}', '2', 'hedged'],
    ['or in prose', 'The answer is 5 or 6.', '6', 'hedged'],
    ['several choices', '\\boxed{A, B, C, D}', 'B', 'hedged'],
    ['choices with or', 'The answer is A or B.', 'A', 'hedged'],
    ['empty box', '\\boxed{}', '0', 'empty-answer'],
    ['absurd length', `\\boxed{${'7'.repeat(5000)}}`, '7', 'answer-too-long'],
    ['unterminated box', `\\boxed{${'{'.repeat(10000)}`, '1', 'answer-too-long'],
    ['question echo', 'What is 2+2? Give the answer as \\boxed{4}.', '4', 'question-echo'],
  ];
  for (const [name, response, gold, violation] of probes) {
    it(`should score 0 for ${name}`, () => {
      const result = verifyMath(response, gold, {
        question: 'What is 2+2? Give the answer as \\boxed{4}.',
      });
      expect(result.score).toBe(0);
      expect(result.violations).toContain(violation);
    });
  }

  it('should not let an echoed question supply the answer', () => {
    const question = 'Tom has 3 apples and buys 4 more. The answer is 7 or 8?';
    expect(verifyMath(`${question}\nI am not sure.`, '7', { question }).score).toBe(0);
    expect(verifyMath(`${question}\nSo \\boxed{7}.`, '7', { question }).score).toBe(1);
  });

  it('should not reward dumping every candidate as a set', () => {
    const dump = Array.from({ length: 50 }, (_, index) => index).join(', ');
    expect(verifyMath(`\\boxed{${dump}}`, '17').score).toBe(0);
    expect(verifyMath(`\\boxed{${dump}}`, '1, 2').score).toBe(0);
  });

  it('should not let a variable or placeholder match a number', () => {
    for (const response of ['\\boxed{x}', '\\boxed{n}', '\\boxed{?}', '\\boxed{\\text{answer}}']) {
      expect(verifyMath(response, '5').score).toBe(0);
    }
  });
});

describe('verifyMath fuzzing (never throws, bounded time)', () => {
  it('should never throw on random strings and always return a valid score', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.string({ maxLength: 30 }), (response, gold) => {
        const result = verifyMath(response, gold);
        expect([0, 1, null]).toContain(result.score);
      }),
      { seed: 20260101, numRuns: 400 },
    );
  });

  it('should never throw on LaTeX-like garbage', () => {
    const token = fc.constantFrom(
      '\\boxed{',
      '}',
      '{',
      '\\frac',
      '\\sqrt',
      '[',
      ']',
      '(',
      ')',
      '^',
      '_',
      '\\left',
      '\\right',
      '1',
      '2.5',
      'x',
      'i',
      '\\pi',
      '\\infty',
      ',',
      '=',
      '<',
      '\\cup',
      '\\pm',
      '%',
      '\\%',
      '&',
      '\\\\',
      '\\begin{pmatrix}',
      '\\end{pmatrix}',
      ' or ',
      '|',
      '!',
      '\\text{',
      'A',
      '(B)',
      '$',
      '<answer>',
      '</answer>',
      '####',
      'The answer is ',
      '\\{',
      '\\}',
      '0',
      '-',
      '/',
      '*',
    );
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 60 }),
        fc.array(token, { maxLength: 12 }),
        (r, g) => {
          const result = verifyMath(r.join(''), g.join(''));
          expect([0, 1, null]).toContain(result.score);
        },
      ),
      { seed: 7, numRuns: 600 },
    );
  });

  it('should handle 1 MB hostile inputs quickly (no ReDoS)', () => {
    const megabyte = 1 << 20;
    const inputs = [
      'a'.repeat(megabyte),
      '\\boxed{'.repeat(megabyte / 7),
      '{'.repeat(megabyte),
      '1,'.repeat(megabyte / 2),
      '9'.repeat(megabyte),
      'The answer is '.repeat(megabyte / 14),
      '<answer>'.repeat(megabyte / 8),
      `${'\\boxed{1}'.repeat(megabyte / 9)}`,
      `${'x'.repeat(megabyte)} or `,
      '$'.repeat(megabyte),
      `\\boxed{${'('.repeat(900)}1${')'.repeat(900)}}`,
      `\\boxed{${'2^'.repeat(400)}2}`,
      `\\boxed{${'\\sqrt{'.repeat(200)}2${'}'.repeat(200)}}`,
      `\\boxed{${'\\frac{1}{'.repeat(150)}2${'}'.repeat(150)}}`,
      `\\boxed{\\binom{100000000}{50000000}}`,
      `\\boxed{100000!}`,
      `\\boxed{10^{10^{10}}}`,
    ];
    for (const input of inputs) {
      const start = performance.now();
      const result = verifyMath(input, '1');
      const elapsed = performance.now() - start;
      expect([0, 1, null]).toContain(result.score);
      expect(elapsed).toBeLessThan(2000); // generous bound; typical is a few ms
    }
  });
});
