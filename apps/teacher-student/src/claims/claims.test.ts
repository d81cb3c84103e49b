import { createRng, InvalidArgumentError } from '@rlvr/core';
import { createTokenizer } from '@rlvr/model';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, mergeConfig, QUICK_OVERRIDES, validateConfig } from '../config.js';
import type { GrpoStepRecord, HeldOutCheck } from '../grpo.js';
import { correctness, hedged, naiveCorrectness, r1Format } from '../rewards.js';
import {
  buildTaskTokenizer,
  makeSplits,
  promptText,
  restated,
  solve,
  solveStyled,
  termsOf,
} from '../task.js';
import { budgetsUpTo } from './budget.js';
import type { ClaimsResult } from './index.js';
import { claimTargets, difficultyHalves, LENGTH_PENALTY_EASY_MAX_COST } from './targets.js';

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

  it('hedged lists: the answer first, then 1 to hedgeMaxExtra other distinct digits (default 3)', () => {
    for (const hedgeMaxExtra of [undefined, 1, 4]) {
      const rng = createRng(21);
      const lengths = new Set<number>();
      for (const problem of train) {
        const text = solveStyled(problem, rng, {
          slipRate: 0,
          shortRate: 0,
          hedgeRate: 1,
          ...(hedgeMaxExtra === undefined ? {} : { hedgeMaxExtra }),
        });
        const digits = /<answer>(.*)<\/answer>/.exec(text)![1]!.split(',');
        expect(digits[0]).toBe(problem.answer);
        expect(new Set(digits).size).toBe(digits.length);
        lengths.add(digits.length - 1);
      }
      const most = hedgeMaxExtra ?? 3;
      expect([...lengths].sort()).toEqual(Array.from({ length: most }, (_, index) => index + 1));
    }
  });

  it('verbose style: the question restated before the chain, as correct and well-formed as the chain', () => {
    const rng = createRng(9);
    const style = { slipRate: 0, shortRate: 0.2, hedgeRate: 0, verboseRate: 0.3 };
    const traces = train.map((problem) => ({ problem, text: solveStyled(problem, rng, style) }));
    const short = traces.filter((trace) => trace.text.startsWith('<think></think>'));
    const verbose = traces.filter((trace) => restated(trace.text) === 1);
    // One draw picks the style: the rates are shares of the data, the styles exclusive.
    expect(short.length / traces.length).toBeGreaterThan(0.14);
    expect(short.length / traces.length).toBeLessThan(0.26);
    expect(verbose.length / traces.length).toBeGreaterThan(0.23);
    expect(verbose.length / traces.length).toBeLessThan(0.37);
    for (const { problem, text } of verbose) {
      const plain = solve(problem);
      expect(text).toBe(plain.replace('<think>', `<think>${problem.prompt.slice(0, -1)},`));
      expect(text.length - plain.length).toBe(problem.prompt.length);
      expect(correctness(text, problem.answer)).toBe(1);
      expect(r1Format(text)).toBe(1);
    }
    for (const { text, problem } of traces.filter((t) => !verbose.includes(t))) {
      expect(restated(text)).toBe(0);
      expect(correctness(text, problem.answer)).toBe(1);
    }
    // The verbose writer slips at its own rate: careful verbose traces next to sloppy plain ones.
    const careful = createRng(11);
    const mixed = train.map((problem) => ({
      problem,
      text: solveStyled(problem, careful, {
        slipRate: 1,
        shortRate: 0,
        hedgeRate: 0,
        verboseRate: 0.5,
        verboseSlipRate: 0,
      }),
    }));
    const accuracy = (rows: typeof mixed) =>
      rows.filter(({ problem, text }) => correctness(text, problem.answer) === 1).length /
      rows.length;
    expect(accuracy(mixed.filter(({ text }) => restated(text) === 1))).toBe(1);
    expect(accuracy(mixed.filter(({ text }) => restated(text) === 0))).toBeLessThan(0.3);
    // Without the verbose style the mix draws exactly the traces it drew before the style existed.
    const before = (verboseRate?: number) => {
      const stream = createRng(4);
      return train.map((problem) =>
        solveStyled(problem, stream, {
          slipRate: 0.2,
          shortRate: 0.1,
          hedgeRate: 0.05,
          ...(verboseRate === undefined ? {} : { verboseRate }),
        }),
      );
    };
    expect(before(0)).toEqual(before());
  });

  it('fits the longest hedged trace (verbose where the config writes verbose ones) in maxNewTokens', () => {
    const tokenizer = createTokenizer(buildTaskTokenizer());
    for (const config of [DEFAULT_CONFIG, mergeConfig(DEFAULT_CONFIG, QUICK_OVERRIDES)]) {
      const { task } = config;
      const terms = [9, ...Array.from({ length: task.maxTerms - 1 }, () => task.termMax)];
      const operators = Array.from({ length: task.maxTerms - 1 }, () => '+' as const);
      const chain = /<think>(.*)<\/think>/.exec(solve({ terms, operators }))![1]!;
      const restatement = `${promptText({ terms, operators }).slice(0, -1)},`;
      const think = config.warmStart.verboseRate > 0 ? `${restatement}${chain}` : chain;
      const list = Array.from({ length: config.warmStart.hedgeMaxExtra + 1 }, (_, i) => i).join(
        ',',
      );
      const longest = `<think>${think}</think><answer>${list}</answer>`;
      // + 1 for the end-of-sequence token.
      expect(tokenizer.encode(longest).length + 1).toBeLessThanOrEqual(config.maxNewTokens);
    }
  });

  it('validates the warm-start style rates naming the key', () => {
    const withWarmStart = (warmStart: Record<string, number>) =>
      validateConfig({
        ...DEFAULT_CONFIG,
        warmStart: { ...DEFAULT_CONFIG.warmStart, ...warmStart },
      });
    const invalid = (warmStart: Record<string, number>, parameter: string) => {
      try {
        withWarmStart(warmStart);
      } catch (error) {
        expect(InvalidArgumentError.isInstance(error)).toBe(true);
        expect((error as InvalidArgumentError).parameter).toBe(parameter);
        return;
      }
      throw new Error(`expected ${JSON.stringify(warmStart)} to be rejected`);
    };
    invalid({ verboseRate: 1.5 }, 'warmStart.verboseRate');
    invalid({ verboseRate: -0.1 }, 'warmStart.verboseRate');
    invalid({ verboseSlipRate: 1.1 }, 'warmStart.verboseSlipRate');
    invalid({ hedgeMaxExtra: 0 }, 'warmStart.hedgeMaxExtra');
    invalid({ hedgeMaxExtra: 10 }, 'warmStart.hedgeMaxExtra');
    invalid({ hedgeMaxExtra: 2.5 }, 'warmStart.hedgeMaxExtra');
    invalid({ shortRate: 0.5, verboseRate: 0.6 }, 'warmStart.verboseRate');
    invalid({ hedgeRate: 2 }, 'warmStart.hedgeRate');
    invalid({ shortRate: 1.2 }, 'warmStart.shortRate');
    expect(() => withWarmStart({ verboseRat: 0.3 })).toThrow(/verboseRate/);
    expect(withWarmStart({ shortRate: 0.5, verboseRate: 0.5 }).warmStart.verboseRate).toBe(0.5);
  });

  it('counts terms and lists thinking budgets up to the longest reasoning', () => {
    expect(termsOf('(3+5-9+2)%10=')).toBe(4);
    expect(budgetsUpTo(13)).toEqual([0, 2, 4, 8, 13]);
    expect(budgetsUpTo(0)).toEqual([0]);
  });

  it('(c) is met only for a shorter policy that loses nothing on the easy half', () => {
    // by difficulty: [terms, prompts, sampled pass@1, mean length]
    type Bucket = [number, number, number, number];
    const check = (buckets: Bucket[], restateRate: number): HeldOutCheck => {
      const prompts = buckets.reduce((sum, [, count]) => sum + count, 0);
      const mean = (index: 2 | 3) =>
        buckets.reduce((sum, bucket) => sum + bucket[1] * bucket[index], 0) / prompts;
      return {
        sampledAccuracy: mean(2),
        greedyAccuracy: mean(2),
        meanLength: mean(3),
        hedgeRate: 0,
        restateRate,
        byTerms: buckets.map(([terms, count, sampledAccuracy, meanLength]) => ({
          terms,
          prompts: count,
          sampledAccuracy,
          meanLength,
        })),
      };
    };
    const run = (last: HeldOutCheck) => ({
      history: [{ step: 10, heldOut: last } as GrpoStepRecord],
      initialHeldOut: check([[3, 10, 0.4, 30]], 0.5),
      initialHeldOutAccuracy: 0.4,
      steps: 10,
      sampledCompletions: 0,
      skippedUpdates: 0,
      timeMs: 0,
      engine: 'optimum',
    });
    // free teacher: easy (3–4 terms) 80%, hard (5–6) 60%, 40 tokens on average
    const free: Bucket[] = [
      [3, 10, 0.8, 30],
      [4, 10, 0.8, 36],
      [5, 10, 0.6, 44],
      [6, 10, 0.6, 50],
    ];
    const teacher = run(check(free, 0.7));
    const rowOf = (penalized: HeldOutCheck) => {
      const claims = {
        steps: 10,
        naiveReward: [{ seed: 1, arm: run(check(free, 0.7)) }],
        hacking: { examples: [], total: 0, caught: 0, hedged: 0 },
        hackingWarmStart: { hedgeRate: 0.05, hedgeMaxExtra: 3 },
        dynamicSampling: [{ seed: 1, on: run(check(free, 0.7)), off: run(check(free, 0.7)) }],
        dynamicSamplingGroupSize: 4,
        dynamicSamplingSteps: 10,
        lengthPenalty: run(penalized),
        lengthPenaltySettings: { maxLength: 60, bufferLength: 56, penaltyFactor: 1 },
        thinkingBudget: [],
      } satisfies ClaimsResult;
      return claimTargets(teacher, claims).find((row) => row.name.startsWith('length penalty'))!;
    };
    // 30 tokens on average (0.75×), easy as good as before, hard 20 points worse: met
    const traded = rowOf(
      check(
        [
          [3, 10, 0.82, 20],
          [4, 10, 0.8, 26],
          [5, 10, 0.4, 34],
          [6, 10, 0.4, 40],
        ],
        0.05,
      ),
    );
    expect(traded.value).toBeCloseTo(0.75);
    expect(traded.met).toBe(true);
    expect(traded.detail).toContain('restate the question 5.0% vs 70.0% (50.0% before RL)');
    expect(traded.detail).toContain(
      'easy (3–4 terms): length 23.0 vs 33.0, sampled pass@1 81.0% vs 80.0% (cost -1.0 points)',
    );
    expect(traded.detail).toContain('hard (5–6 terms): length 37.0 vs 47.0');
    expect(traded.detail).toContain('(cost 20.0 points)');
    // as short, but the easy half lost more than the bound: not met
    const easyLoss = 0.8 - (LENGTH_PENALTY_EASY_MAX_COST + 1) / 100;
    const costly = check(
      [
        [3, 10, easyLoss, 20],
        [4, 10, easyLoss, 26],
        [5, 10, 0.6, 34],
        [6, 10, 0.6, 40],
      ],
      0.05,
    );
    expect(rowOf(costly).met).toBe(false);
    // no loss anywhere but not short enough (0.925×): not met
    const long = free.map(
      ([terms, count, accuracy, length]): Bucket => [terms, count, accuracy, length - 3],
    );
    expect(rowOf(check(long, 0.4)).met).toBe(false);
    // an odd number of difficulties: the easy half is the lower one (3 of 2–4 → 2 only)
    const halves = difficultyHalves(
      check(
        [
          [2, 1, 1, 1],
          [3, 1, 1, 1],
          [4, 1, 1, 1],
        ],
        0,
      ),
    );
    expect([...halves.easy]).toEqual([2]);
    expect([...halves.hard]).toEqual([3, 4]);
  });

  it('(a) compares the naive arm with its own control when the claim has its own warm-start', () => {
    const check = (sampledAccuracy: number, hedgeRate: number): HeldOutCheck => ({
      sampledAccuracy,
      greedyAccuracy: sampledAccuracy,
      meanLength: 30,
      hedgeRate,
      restateRate: 0,
      byTerms: [],
    });
    // 10 steps: the naive reward climbs 0.4 → 0.8 while true accuracy stays at 0.4
    const history = (naive: number[], robust: number[], last: HeldOutCheck) =>
      naive.map(
        (accuracy, index) =>
          ({
            step: index + 1,
            accuracy,
            robustAccuracy: robust[index]!,
            ...(index === naive.length - 1 ? { heldOut: last } : {}),
          }) as GrpoStepRecord,
      );
    const arm = (records: GrpoStepRecord[]) => ({
      history: records,
      initialHeldOut: check(0.4, 0.05),
      initialHeldOutAccuracy: 0.4,
      steps: records.length,
      sampledCompletions: 0,
      skippedUpdates: 0,
      timeMs: 0,
      engine: 'optimum',
    });
    const climbing = Array.from({ length: 10 }, (_, i) => 0.4 + (0.4 * i) / 9);
    const flat = Array.from({ length: 10 }, () => 0.4);
    const naive = arm(history(climbing, flat, check(0.4, 0.3)));
    // the main teacher hedges more than the naive arm here; the claim's own control does not
    const teacher = arm(history(flat, flat, check(0.7, 0.5)));
    const control = arm(history(flat, flat, check(0.7, 0.01)));
    const claims = (hackingControl?: typeof control, naiveReward = [{ seed: 1, arm: naive }]) =>
      ({
        steps: 10,
        naiveReward,
        ...(hackingControl === undefined ? {} : { hackingControl }),
        hackingWarmStart: { hedgeRate: 0.1, hedgeMaxExtra: 4 },
        hacking: { examples: [], total: 0, caught: 0, hedged: 0 },
        dynamicSampling: [{ seed: 1, on: control, off: control }],
        dynamicSamplingGroupSize: 4,
        dynamicSamplingSteps: 10,
        lengthPenalty: control,
        lengthPenaltySettings: { maxLength: 60, bufferLength: 56, penaltyFactor: 1 },
        thinkingBudget: [],
      }) satisfies ClaimsResult;
    const row = (result: ClaimsResult) =>
      claimTargets(teacher, result).find((entry) => entry.name.startsWith('reward hacking'))!;
    const own = row(claims(control));
    // last fifth (steps 9–10) − first fifth (steps 1–2) of the naive reward; true accuracy flat
    const fifth = (from: number) => (climbing[from]! + climbing[from + 1]!) / 2;
    expect(own.value).toBeCloseTo(100 * (fifth(8) - fifth(0)), 6);
    expect(own.met).toBe(true);
    expect(own.detail).toContain('30.0% (naive reward, mean) vs 1.0% (verifier reward)');
    expect(own.detail).toContain('10.0% hedged answers of 1–4 extra digits, both from the claim');
    // without its own control the teacher run is the control (and here hedges more)
    expect(row(claims()).met).toBe(false);
    // several seeds: the mean gap decides (+35.6 and +0.0: +17.8), each seed is in the details
    const honest = arm(history(climbing, climbing, check(0.6, 0.1)));
    const both = row(
      claims(control, [
        { seed: 1, arm: naive },
        { seed: 2, arm: honest },
      ]),
    );
    expect(both.value).toBeCloseTo((100 * (fifth(8) - fifth(0))) / 2, 6);
    expect(both.met).toBe(true);
    expect(both.goal).toContain('mean of 2 GRPO seed(s)');
    expect(both.detail).toContain('seed 1 +35.6 (hedged 30.0%), seed 2 +0.0 (hedged 10.0%)');
    expect(both.detail).toContain('20.0% (naive reward, mean) vs 1.0% (verifier reward)');
  });

  it('(b) compares the mean of its on/off seed pairs, whatever one pair does', () => {
    const check = (sampledAccuracy: number): HeldOutCheck => ({
      sampledAccuracy,
      greedyAccuracy: sampledAccuracy,
      meanLength: 30,
      hedgeRate: 0,
      restateRate: 0,
      byTerms: [],
    });
    const arm = (records: GrpoStepRecord[]) => ({
      history: records,
      initialHeldOut: check(0.4),
      initialHeldOutAccuracy: 0.4,
      steps: records.length,
      sampledCompletions: 0,
      skippedUpdates: 0,
      timeMs: 0,
      engine: 'optimum',
    });
    // 10 steps with this zero-variance fraction, checked at the last
    const at = (accuracy: number, zero: number) =>
      arm(
        Array.from(
          { length: 10 },
          (_, index) =>
            ({
              step: index + 1,
              accuracy: 0.4,
              robustAccuracy: 0.4,
              fracZeroStd: zero,
              ...(index === 9 ? { heldOut: check(accuracy) } : {}),
            }) as GrpoStepRecord,
        ),
      );
    const teacher = at(0.9, 0.1);
    const claims = (dynamicSampling: ClaimsResult['dynamicSampling']) =>
      ({
        steps: 10,
        naiveReward: [{ seed: 1, arm: teacher }],
        hackingWarmStart: { hedgeRate: 0.1, hedgeMaxExtra: 4 },
        hacking: { examples: [], total: 0, caught: 0, hedged: 0 },
        dynamicSampling,
        dynamicSamplingGroupSize: 4,
        dynamicSamplingSteps: 10,
        lengthPenalty: teacher,
        lengthPenaltySettings: { maxLength: 60, bufferLength: 56, penaltyFactor: 1 },
        thinkingBudget: [],
      }) satisfies ClaimsResult;
    const row = (result: ClaimsResult) =>
      claimTargets(teacher, result).find((entry) => entry.name.startsWith('dynamic sampling'))!;
    // three pairs: −10, +20, +5 points: the mean (+5) decides, not one pair
    const own = row(
      claims([
        { seed: 1, on: at(0.5, 0.2), off: at(0.6, 0.25) },
        { seed: 2, on: at(0.8, 0.3), off: at(0.6, 0.25) },
        { seed: 3, on: at(0.7, 0.1), off: at(0.65, 0.25) },
      ]),
    );
    expect(own.value).toBeCloseTo(5, 6);
    expect(own.met).toBe(true);
    expect(own.goal).toContain('mean of 3 seed pair(s)');
    expect(own.goal).toContain('RL teacher + 10 GRPO steps (4 samples per prompt)');
    expect(own.detail).toContain(
      '(held-out 40.0% before): seed 1 −10.0 (50.0% vs 60.0%), seed 2 +20.0',
    );
    expect(own.detail).toContain('mean on 66.7% vs off 61.7%');
    expect(own.detail).toContain('20.0% (on, such groups resampled/dropped) vs 25.0% (off');
    expect(row(claims([{ seed: 1, on: at(0.5, 0.2), off: at(0.6, 0.25) }])).met).toBe(false);
  });
});
