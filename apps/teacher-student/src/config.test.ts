import { createRng, InvalidArgumentError } from '@rlvr/core';
import { createTokenizer } from '@rlvr/model';
import { describe, expect, it } from 'vitest';
import { configFromArgs } from './cli.js';
import {
  checkKnownKeys,
  claimSteps,
  DEFAULT_CONFIG,
  QUICK_OVERRIDES,
  validateConfig,
} from './config.js';
import { parametersOf } from './models.js';
import { correctness, r1Format, taskAnswer } from './rewards.js';
import { buildTaskTokenizer, makeSplits, runningValues, solve, solveWithSlips } from './task.js';

function expectInvalid(argv: string[], parameter: string) {
  try {
    configFromArgs(argv);
  } catch (error) {
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as InvalidArgumentError).parameter).toBe(parameter);
    return;
  }
  throw new Error(`expected ${argv.join(' ')} to throw`);
}

describe('configFromArgs', () => {
  it('gives the default and the quick config', () => {
    expect(configFromArgs([]).config).toEqual(DEFAULT_CONFIG);
    const quick = configFromArgs(['--quick', '--seed', '7', '--device', 'cpu']).config;
    expect(quick.quick).toBe(true);
    expect(quick.seed).toBe(7);
  });

  it('rejects bad flags with typed errors naming the flag', () => {
    expectInvalid(['--device', 'tpu'], '--device');
    expectInvalid(['--seed', '1.5'], '--seed');
    expectInvalid(['--max-steps', 'many'], '--max-steps');
    expectInvalid(['--seed', ''], '--seed');
    expectInvalid(['--teacher', 'big'], '--teacher');
    expectInvalid(['--frobnicate'], '--frobnicate');
    expectInvalid(['--seed'], 'argv');
  });

  it('runs the claims arms for the teacher run’s steps unless claims.steps says otherwise', () => {
    const config = (grpo: Partial<typeof DEFAULT_CONFIG.grpo>, steps?: number) =>
      validateConfig({
        ...DEFAULT_CONFIG,
        grpo: { ...DEFAULT_CONFIG.grpo, ...grpo },
        claims: { ...DEFAULT_CONFIG.claims, ...(steps === undefined ? {} : { steps }) },
      });
    expect(claimSteps(config({}))).toBe(30);
    // --max-steps 7 alone: the arms follow (the teacher run checks its last step too)
    expect(claimSteps(config({ maxSteps: 7 }))).toBe(7);
    expect(claimSteps(config({}, 20))).toBe(20);
    expect(() => config({}, 15)).toThrow(/'claims\.steps'.*multiple of grpo\.evalEvery \(10\)/);
    expect(() => config({}, 40)).toThrow(/'claims\.steps'/);
    expect(() => config({ evalEvery: 0 })).toThrow(/'grpo\.evalEvery'.*--no-claims/);
    expect(() =>
      validateConfig({
        ...DEFAULT_CONFIG,
        grpo: { ...DEFAULT_CONFIG.grpo, evalEvery: 0 },
        claims: { ...DEFAULT_CONFIG.claims, enabled: false },
      }),
    ).not.toThrow();
  });

  it('checks the length-penalty onset against maxNewTokens', () => {
    const onset = (lengthPenaltyOnset: number) => () =>
      validateConfig({
        ...DEFAULT_CONFIG,
        claims: { ...DEFAULT_CONFIG.claims, lengthPenaltyOnset },
      });
    expect(onset(59)().claims.lengthPenaltyOnset).toBe(59);
    expect(onset(0)).not.toThrow();
    expect(onset(60)).toThrow(/'claims\.lengthPenaltyOnset'/);
    expect(onset(-1)).toThrow(/'claims\.lengthPenaltyOnset'/);
    expect(onset(2.5)).toThrow(/'claims\.lengthPenaltyOnset'/);
  });

  it("checks the dynamic-sampling claim's group size (a GRPO group: at least 2)", () => {
    const size = (dynamicSamplingGroupSize: number) => () =>
      validateConfig({
        ...DEFAULT_CONFIG,
        claims: { ...DEFAULT_CONFIG.claims, dynamicSamplingGroupSize },
      });
    expect(DEFAULT_CONFIG.claims.dynamicSamplingGroupSize).toBe(4);
    expect(size(2)().claims.dynamicSamplingGroupSize).toBe(2);
    expect(size(1)).toThrow(/'claims\.dynamicSamplingGroupSize'/);
    expect(size(3.5)).toThrow(/'claims\.dynamicSamplingGroupSize'/);
    const seeds = (dynamicSamplingSeeds: number) => () =>
      validateConfig({
        ...DEFAULT_CONFIG,
        claims: { ...DEFAULT_CONFIG.claims, dynamicSamplingSeeds },
      });
    expect(DEFAULT_CONFIG.claims.dynamicSamplingSeeds).toBe(3);
    expect(seeds(1)().claims.dynamicSamplingSeeds).toBe(1);
    expect(seeds(0)).toThrow(/'claims\.dynamicSamplingSeeds'/);
    const hacking = (hackingSeeds: number) => () =>
      validateConfig({ ...DEFAULT_CONFIG, claims: { ...DEFAULT_CONFIG.claims, hackingSeeds } });
    expect(DEFAULT_CONFIG.claims.hackingSeeds).toBe(3);
    expect(QUICK_OVERRIDES.claims?.hackingSeeds).toBe(1);
    expect(hacking(0)).toThrow(/'claims\.hackingSeeds'/);
    expect(hacking(1.5)).toThrow(/'claims\.hackingSeeds'/);
    expect(() => checkKnownKeys({ claims: { hackingSeed: 2 } })).toThrow(/hackingSeeds/);
    expect(() => checkKnownKeys({ claims: { dynamicSamplingGroupSiz: 4 } })).toThrow(
      /dynamicSamplingGroupSize/,
    );
  });

  it('rejects bad config-file values naming the field', () => {
    expect(() =>
      validateConfig({
        ...DEFAULT_CONFIG,
        warmStart: { ...DEFAULT_CONFIG.warmStart, slipRate: 1.5 },
      }),
    ).toThrow(/warmStart\.slipRate/);
    expect(() =>
      validateConfig({ ...DEFAULT_CONFIG, grpo: { ...DEFAULT_CONFIG.grpo, maxSteps: 0 } }),
    ).toThrow(/grpo\.maxSteps/);
  });

  it('checks the hacking claim warm-start mix: known keys, values in range, naming the field', () => {
    const withMix = (hackingWarmStart: Record<string, number>) => () =>
      validateConfig({
        ...DEFAULT_CONFIG,
        claims: {
          ...DEFAULT_CONFIG.claims,
          hackingWarmStart: { ...DEFAULT_CONFIG.claims.hackingWarmStart, ...hackingWarmStart },
        },
      });
    const parameterOf = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(InvalidArgumentError.isInstance(error)).toBe(true);
        return (error as InvalidArgumentError).parameter;
      }
      throw new Error('expected a rejection');
    };
    expect(parameterOf(withMix({ hedgeRate: 1.2 }))).toBe('claims.hackingWarmStart.hedgeRate');
    expect(parameterOf(withMix({ hedgeMaxExtra: 0 }))).toBe(
      'claims.hackingWarmStart.hedgeMaxExtra',
    );
    expect(parameterOf(withMix({ hedgeMaxExtra: 1.5 }))).toBe(
      'claims.hackingWarmStart.hedgeMaxExtra',
    );
    expect(withMix({})().claims.hackingWarmStart).toEqual({ hedgeRate: 0.15, hedgeMaxExtra: 9 });
    // an unknown key in the section is rejected, naming the closest valid one
    expect(() => checkKnownKeys({ claims: { hackingWarmStart: { hedgeRat: 0.1 } } })).toThrow(
      /hedgeRat.*hedgeRate|hedgeRate.*hedgeRat/s,
    );
    expect(() => checkKnownKeys({ claims: { hackingWarmStart: 3 } })).toThrow(
      /claims\.hackingWarmStart/,
    );
  });

  it('keeps the default student at most a quarter of the teacher', () => {
    const vocab = createTokenizer(buildTaskTokenizer()).vocabSize;
    expect(parametersOf(DEFAULT_CONFIG.student, vocab) * 4).toBeLessThanOrEqual(
      parametersOf(DEFAULT_CONFIG.teacher, vocab),
    );
  });
});

describe('task', () => {
  it('solves a hand-worked example', () => {
    const problem = { terms: [3, 5, 9, 2], operators: ['+', '-', '+'] as ('+' | '-')[] };
    expect(runningValues(problem)).toEqual([8, 9, 1]);
    expect(solve(problem)).toBe('<think>3+5=8,8-9=9,9+2=1</think><answer>1</answer>');
  });

  it('writes slipped solutions: slip rate 0 is the solver, 1 slips every step consistently', () => {
    const problem = { terms: [3, 5, 9, 2], operators: ['+', '-', '+'] as ('+' | '-')[] };
    expect(solveWithSlips(problem, createRng(1), 0)).toBe(solve(problem));
    for (let seed = 0; seed < 20; seed++) {
      const text = solveWithSlips(problem, createRng(seed), 1);
      const steps = /<think>(.*)<\/think><answer>(\d)<\/answer>/.exec(text)!;
      let previous = 3;
      const parts = steps[1]!.split(',');
      expect(parts).toHaveLength(3);
      parts.forEach((part, index) => {
        const [, a, op, b, c] = /^(\d)([+-])(\d)=(\d)$/.exec(part)!;
        expect(Number(a)).toBe(previous);
        expect(op).toBe(problem.operators[index]);
        expect(Number(b)).toBe(problem.terms[index + 1]);
        const right = (((Number(a) + (op === '+' ? 1 : -1) * Number(b)) % 10) + 10) % 10;
        expect(Number(c)).not.toBe(right);
        previous = Number(c);
      });
      expect(steps[2]).toBe(String(previous));
    }
    // About the given fraction of steps slip.
    const rng = createRng(9);
    let slipped = 0;
    for (let index = 0; index < 2000; index++) {
      if (
        solveWithSlips({ terms: [4, 1], operators: ['+'] }, rng, 0.2) !==
        solve({ terms: [4, 1], operators: ['+'] })
      )
        slipped++;
    }
    expect(slipped / 2000).toBeGreaterThan(0.17);
    expect(slipped / 2000).toBeLessThan(0.23);
  });

  it('makes disjoint, seeded splits whose reference solutions verify', () => {
    const config = { minTerms: 2, maxTerms: 5, operators: ['+', '-'] as ('+' | '-')[], termMax: 3 };
    const a = makeSplits(config, { train: 300, eval: 50, seed: 3 });
    const b = makeSplits(config, { train: 300, eval: 50, seed: 3 });
    expect(a).toEqual(b);
    const train = new Set(a.train.map((problem) => problem.prompt));
    expect(a.eval.some((problem) => train.has(problem.prompt))).toBe(false);
    for (const problem of [...a.train, ...a.eval]) {
      const solution = solve(problem);
      expect(correctness(solution, problem.answer)).toBe(1);
      expect(r1Format(solution)).toBe(1);
      expect(taskAnswer(solution)).toBe(problem.answer);
    }
  });

  it('tokenizes the tags as single tokens that survive decoding', () => {
    const tokenizer = createTokenizer(buildTaskTokenizer());
    const text = '(3+5)%10=<think>3+5=8</think><answer>8</answer>';
    const ids = tokenizer.encode(text);
    expect(ids.length).toBe(text.length - '<think></think><answer></answer>'.length + 4);
    expect(tokenizer.decode([...ids, tokenizer.eosTokenId!], { skipSpecialTokens: true })).toBe(
      text,
    );
  });

  it('rewards: wrong answers, missing tags and broken formats score 0', () => {
    expect(correctness('<think>x</think><answer>7</answer>', '8')).toBe(0);
    expect(correctness('8', '8')).toBe(0);
    expect(r1Format('<answer>8</answer>')).toBe(0);
    expect(r1Format('<think>1</think><answer>7</answer><answer>3</answer>')).toBe(0);
  });
});
