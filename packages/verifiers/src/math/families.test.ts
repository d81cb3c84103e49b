import { describe, expect, it } from 'vitest';
import { FAMILY_CORPUS } from './__fixtures__/conformance-families.js';
import { extractAnswer, mathEquivalent, verifyMath } from './index.js';

const FAMILIES = [
  'thousands',
  'currency',
  'plus-minus',
  'choice-phrasing',
  'mixed-number',
  'box-punctuation',
  'multi-box',
  'answer-statement',
  'big-number',
  'unicode',
  'nested-box',
  'hedging-families',
  'held-out-2',
];

describe('verifyMath issue-12 family corpus', () => {
  it('should cover every family with matching and non-matching cases', () => {
    for (const family of FAMILIES) {
      const cases = FAMILY_CORPUS.filter(([category]) => category === family);
      expect(cases.some((item) => item[3] === 1) || family === 'hedging-families').toBe(true);
      expect(cases.some((item) => item[3] === 0)).toBe(true);
    }
  });

  it('should score every case as expected, with no hacking case passing', () => {
    const failures: string[] = [];
    for (const [category, response, gold, expected] of FAMILY_CORPUS) {
      const result = verifyMath(response, gold);
      if (result.score !== expected) {
        failures.push(`${category}: ${response.slice(0, 70)} | ${gold} → ${result.score}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

describe('verifyMath issue-12 regressions', () => {
  it('should never compare numbers beyond the float range as infinity', () => {
    expect(mathEquivalent('10^{309}', '\\infty')).toBe(false);
    expect(mathEquivalent('2^{5000}', '2^{5001}')).toBe(false);
    expect(mathEquivalent('2^{5000}', '2^{5000}')).toBe(true);
    expect(mathEquivalent('2^{10000}', '4^{5000}')).toBe(true); // exact big integers
    expect(mathEquivalent('e^{1000}', 'e^{1001}')).toBe(false); // float overflow: not comparable
    expect(mathEquivalent('0.1^{400}', '0')).toBe(false); // exact, no underflow to 0
    expect(mathEquivalent('x^{5000}', 'x^{5001}')).toBe(false);
  });

  it('should read the Unicode minus as a minus (no sign flip)', () => {
    expect(extractAnswer('Therefore x is −3').answer).toBe('-3');
    expect(verifyMath('Therefore x is −3', '3').score).toBe(0);
    expect(mathEquivalent('−½', '-0.5')).toBe(true);
    expect(mathEquivalent('１２', '12')).toBe(true);
    expect(mathEquivalent('x⁴ − 1', 'x^4 - 1')).toBe(true);
  });

  it('should not label a closed, deeply nested box unterminated', () => {
    const closed = `\\boxed{${'{'.repeat(3000)}7${'}'.repeat(3000)}}`;
    const result = verifyMath(closed, '7');
    expect(result.score).toBe(0); // longer than maxAnswerLength
    expect(result.violations).toEqual(['answer-too-long']);
    const open = `\\boxed{${'{'.repeat(3000)}7${'}'.repeat(2999)}`;
    expect(verifyMath(open, '7').violations).toEqual(['unterminated-box', 'answer-too-long']);
  });

  it('should read several boxes as the answer only when the gold lists several values', () => {
    const response = 'The solutions are $\\boxed{2}$ and $\\boxed{3}$.';
    expect(verifyMath(response, '2, 3').score).toBe(1);
    const single = verifyMath(response, '2');
    expect(single.score).toBe(0);
    expect(single.violations).toContain('hedged');
  });

  it('should take the value an answer statement names, not a hedge or a bound', () => {
    expect(extractAnswer('Final Answer: The largest $n$ is 34.').answer).toBe('34');
    expect(verifyMath('Final Answer: $n$ is at least 34.', '34').score).toBe(0);
    expect(verifyMath('Final Answer: The largest $n$ is 34 or 35.', '34').score).toBe(0);
  });
});
