import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ISSUE35_CORPUS, ISSUE35_FAMILIES } from './__fixtures__/conformance-issue35.js';
import { extractAnswer, verifyMath } from './index.js';

describe('verifyMath issue-35 / issue-32 families (unmarked answers, formats, gaps, boxes by position)', () => {
  it('should cover every family in both directions', () => {
    for (const family of ISSUE35_FAMILIES) {
      const cases = ISSUE35_CORPUS.filter(([category]) => category === family);
      expect(
        cases.some((item) => item[3] === 1),
        family,
      ).toBe(true);
      expect(
        cases.some((item) => item[3] === 0),
        family,
      ).toBe(true);
    }
  });

  it('should score every case as expected, with no should-not case paid', () => {
    const failures: string[] = [];
    for (const [category, response, gold, expected] of ISSUE35_CORPUS) {
      const result = verifyMath(response, gold);
      if (result.score !== expected) {
        failures.push(`${category}: ${response.slice(0, 70)} | ${gold} → ${result.score}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('should say why an unmarked response has no answer', () => {
    expect(verifyMath('AZYUK2A', '2').reason).toBe(
      'the last number is a digit inside a word or number',
    );
    expect(verifyMath('so the value is x^2', '2').reason).toBe(
      'the last number is a digit inside an expression',
    );
    expect(extractAnswer('Therefore $x \\geq 5$ is the solution.')).toMatchObject({
      answer: 'x \\geq 5',
      source: 'last-span',
    });
    expect(extractAnswer('so she has 18 apples.')).toMatchObject({
      answer: '18',
      source: 'last-number',
    });
  });

  it('should refuse unusable golds with the reason, never silently', () => {
    expect(verifyMath('\\boxed{0.111}', '0,111').reason).toMatch(/ambiguous/);
    expect(verifyMath('\\boxed{7}', '\\boxed{7').reason).toMatch(/unterminated/);
    expect(verifyMath('\\boxed{7}', '$1 = \\zzz = x = 0$').reason).toMatch(/zzz/);
  });

  it('should keep the hedge defense and read several boxes for a gold that lists several values', () => {
    const hedge = verifyMath('The answer is \\boxed{6}. Or maybe it is \\boxed{7}.', '7');
    expect(hedge.violations).toContain('hedged');
    expect(verifyMath('\\boxed{6} or \\boxed{7}', '6, 7').score).toBe(1);
    expect(verifyMath('\\boxed{6} or \\boxed{7}', '6, 7, 8').score).toBe(0);
    // multipleAnswers 'last' takes the last box whatever surrounds it
    expect(verifyMath('\\boxed{6} or \\boxed{7}', '7', { multipleAnswers: 'last' }).score).toBe(1);
  });
});

type SuiteCase = {
  source: string;
  gold: string;
  response: string;
  expected: 0 | 1;
  options?: Record<string, unknown>;
  ours?: 0 | 1 | null;
  convention?: string;
};

const suite = JSON.parse(
  readFileSync(new URL('./__fixtures__/math-verify-suite.json', import.meta.url), 'utf8'),
) as { cases: SuiteCase[] };

describe("verifyMath on Math-Verify 0.8.0's own test suite", () => {
  it('should decide every case as Math-Verify does, or as its documented convention says', () => {
    expect(suite.cases).toHaveLength(269);
    const failures: string[] = [];
    for (const item of suite.cases) {
      const expected = item.ours === undefined ? item.expected : item.ours;
      const score = verifyMath(item.response, item.gold).score;
      if (score !== expected) failures.push(`${item.source}: expected ${expected}, got ${score}`);
    }
    expect(failures).toEqual([]);
  });

  it('should agree on at least 90%, and pay nothing Math-Verify rejects unless an option of its own accepts it', () => {
    // null (not applicable) pays nothing: it agrees with a 0
    const verdict = (item: SuiteCase) =>
      item.ours === undefined ? item.expected : (item.ours ?? 0);
    const agree = suite.cases.filter((item) => verdict(item) === item.expected);
    expect(agree.length / suite.cases.length).toBeGreaterThanOrEqual(0.9);
    const paid = suite.cases.filter((item) => item.ours === 1 && item.expected === 0);
    expect(paid.map((item) => item.source)).toEqual([
      'tests/test_all.py::test_set_rel_assymetry[3]',
    ]);
    for (const item of suite.cases) {
      if (item.ours !== undefined) expect(item.convention?.length, item.source).toBeGreaterThan(30);
    }
  });
});
