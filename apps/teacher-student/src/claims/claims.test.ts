import { createRng } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { correctness, hedged, naiveCorrectness } from '../rewards.js';
import { makeSplits, solveStyled, termsOf } from '../task.js';
import { budgetsUpTo } from './budget.js';

describe('claims building blocks', () => {
  const { train } = makeSplits(
    { minTerms: 2, maxTerms: 5, operators: ['+', '-'], termMax: 3 },
    { train: 400, eval: 10, seed: 3 },
  );

  it('warm-start styles: short traces skip the steps, hedged ones list the answer with others', () => {
    const rng = createRng(5);
    const traces = train.map((problem) => ({
      problem,
      text: solveStyled(problem, rng, { slipRate: 0, shortRate: 0.3, hedgeRate: 0.2 }),
    }));
    const short = traces.filter((trace) => trace.text.startsWith('<think></think>'));
    const hedges = traces.filter((trace) => hedged(trace.text) === 1);
    expect(short.length / traces.length).toBeGreaterThan(0.2);
    expect(short.length / traces.length).toBeLessThan(0.4);
    expect(hedges.length / traces.length).toBeGreaterThan(0.12);
    expect(hedges.length / traces.length).toBeLessThan(0.28);
    for (const trace of hedges) {
      // The exploit: the naive checker accepts every hedge of a correct trace, the verifier none.
      expect(naiveCorrectness(trace.text, trace.problem.answer)).toBe(1);
      expect(correctness(trace.text, trace.problem.answer)).toBe(0);
    }
    for (const trace of traces.filter((t) => hedged(t.text) === 0)) {
      expect(correctness(trace.text, trace.problem.answer)).toBe(1);
    }
  });

  it('counts terms and lists thinking budgets up to the longest reasoning', () => {
    expect(termsOf('(3+5-9+2)%10=')).toBe(4);
    expect(budgetsUpTo(13)).toEqual([0, 2, 4, 8, 13]);
    expect(budgetsUpTo(0)).toEqual([0]);
  });
});
