import { createRng } from '@rlvr/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateCountdown, verifyCountdown } from './countdown.js';
import {
  generateKnightsKnaves,
  solveKnightsKnaves,
  verifyKnightsKnaves,
} from './knights-knaves.js';
import { countdownReward, knightsKnavesReward } from './reward.js';

describe('generateCountdown', () => {
  it('should be reproducible from a seed and graded by difficulty', () => {
    expect(generateCountdown({ seed: 9, difficulty: 3 })).toEqual(
      generateCountdown({ seed: 9, difficulty: 3 }),
    );
    for (let difficulty = 1; difficulty <= 5; difficulty++) {
      const task = generateCountdown({ seed: `d${difficulty}`, difficulty });
      expect(task.numbers.length).toBe([3, 3, 4, 4, 5][difficulty - 1]);
      expect(task.prompt).toContain(String(task.target));
    }
  });

  it('should always produce a solution that verifies with every number and integer steps (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 1, max: 5 }),
        (seed, difficulty) => {
          const task = generateCountdown({ seed, difficulty });
          const result = verifyCountdown(`<answer>${task.solution}</answer>`, task, {
            useAllNumbers: true,
            integerSteps: true,
          });
          expect(result.score).toBe(1);
        },
      ),
      { seed: 17, numRuns: 150 },
    );
  });

  it('should accept an Rng from core', () => {
    const task = generateCountdown({ seed: createRng(1).derive('task-0'), difficulty: 1 });
    expect(task.numbers).toHaveLength(3);
  });
});

describe('verifyCountdown', () => {
  const task = { numbers: [2, 5, 6], target: 20 };

  it('should evaluate the expression exactly and check the numbers', () => {
    expect(verifyCountdown('<answer>(6 - 2) * 5</answer>', task).score).toBe(1);
    expect(verifyCountdown('<answer>(6 - 2) × 5 = 20</answer>', task).score).toBe(1);
    expect(verifyCountdown('Thus \\boxed{5 \\times (6 - 2)}', task).score).toBe(1);
    expect(verifyCountdown('<answer>6 * 2 + 5</answer>', task)).toMatchObject({
      score: 0,
      violations: ['wrong-value'],
    });
    expect(verifyCountdown('<answer>6 * 2 + 5</answer>', task, { formatScore: 0.1 }).score).toBe(
      0.1,
    );
    expect(verifyCountdown('<answer>5 * 2 * 2</answer>', task).violations).toEqual([
      'number-reused',
    ]);
    expect(verifyCountdown('<answer>4 * 5</answer>', task).violations).toEqual([
      'number-not-allowed',
    ]);
    expect(
      verifyCountdown('<answer>5 * (6 - 2)</answer>', task, { useAllNumbers: true }).score,
    ).toBe(1);
    expect(
      verifyCountdown('<answer>(6 + 2) * 5 / 2</answer>', { numbers: [2, 2, 5, 6], target: 20 })
        .score,
    ).toBe(1);
  });

  it('should reject reward-hacking attempts', () => {
    const probes = [
      '<answer>20</answer>', // just the target
      '<answer>eval("20")</answer>', // code
      '<answer>(6 - 2) * 5; 20</answer>',
      '<answer>2.5 * 8</answer>', // decimals are not given numbers
      '<answer>-(-20)</answer>', // unary minus
      '<answer>56 - 2 * 5 - 26</answer>', // digit concatenation
      '<answer>6 / 0</answer>',
      '<answer></answer>',
      'The answer is 20',
      '<answer>(6 - 2) * 5 or 6 * 2 + 5</answer>',
    ];
    for (const probe of probes) expect(verifyCountdown(probe, task).score, probe).toBe(0);
  });

  it('should require integer steps only when asked', () => {
    const fractional = { numbers: [1, 3, 9], target: 3 };
    expect(verifyCountdown('<answer>(1 / 3) * 9</answer>', fractional).score).toBe(1);
    expect(
      verifyCountdown('<answer>(1 / 3) * 9</answer>', fractional, { integerSteps: true })
        .violations,
    ).toEqual(['non-integer-step']);
  });

  it('should validate the task', () => {
    expect(() => verifyCountdown('x', { numbers: [], target: 1 })).toThrow(/'task.numbers'/);
    expect(() => verifyCountdown('x', { numbers: [1.5], target: 1 })).toThrow(
      /'task.numbers\[0\]'/,
    );
    expect(() => generateCountdown({ seed: 1, difficulty: 9 })).toThrow(/'options.difficulty'/);
  });
});

describe('generateKnightsKnaves', () => {
  it('should produce puzzles with exactly one solution (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 1, max: 5 }),
        (seed, difficulty) => {
          const task = generateKnightsKnaves({ seed, difficulty });
          expect(task.names).toHaveLength(difficulty + 1);
          const solutions = solveKnightsKnaves(task.statements);
          expect(solutions).toHaveLength(1);
          task.names.forEach((name, index) => {
            expect(task.solution[name]).toBe(solutions[0]![index] ? 'knight' : 'knave');
          });
        },
      ),
      { seed: 23, numRuns: 60 },
    );
  });

  it('should solve a hand-worked puzzle', () => {
    // A: "B is a knave". B: "A and I are the same kind". If A is a knight, B is a knave, so B's
    // statement (A ≠ B is false... A knight, B knave: different) is false — consistent. If A is a
    // knave, B is a knight, but then "same kind" is false for a knight: contradiction.
    const solutions = solveKnightsKnaves([
      { kind: 'is', person: 1, role: 'knave' },
      { kind: 'same', a: 0, b: 1 },
    ]);
    expect(solutions).toEqual([[true, false]]);
  });
});

describe('verifyKnightsKnaves', () => {
  const task = { names: ['Alice', 'Bob'], solution: { Alice: 'knight', Bob: 'knave' } as const };

  it('should read roles in several phrasings', () => {
    expect(
      verifyKnightsKnaves('<answer>Alice is a knight\nBob is a knave</answer>', task).score,
    ).toBe(1);
    expect(verifyKnightsKnaves('<answer>Alice: knight; Bob: knave</answer>', task).score).toBe(1);
    expect(
      verifyKnightsKnaves('<answer>Alice is not a knave. Bob is a liar.</answer>', task).score,
    ).toBe(1);
    expect(
      verifyKnightsKnaves('<answer>Alice is a knave. Bob is a knave.</answer>', task).score,
    ).toBe(0);
    expect(
      verifyKnightsKnaves('<answer>Alice is a knave. Bob is a knave.</answer>', task, {
        partialCredit: true,
      }).score,
    ).toBe(0.5);
  });

  it('should reject hedges and missing names', () => {
    const hedge = verifyKnightsKnaves(
      '<answer>Alice is a knight or a knave. Bob is a knave.</answer>',
      task,
    );
    expect(hedge.score).toBe(0);
    expect(hedge.violations).toContain('hedged:Alice');
    expect(
      verifyKnightsKnaves(
        '<answer>Alice is a knight. Alice is a knave. Bob is a knave</answer>',
        task,
      ).score,
    ).toBe(0);
    expect(verifyKnightsKnaves('<answer>Alice is a knight</answer>', task).violations).toEqual([
      'missing:Bob',
    ]);
  });
});

describe('puzzle fuzzing', () => {
  it('should never throw and stay fast on garbage and 1 MB inputs', () => {
    const countdownTask = { numbers: [2, 5, 6], target: 20 };
    const kkTask = {
      names: ['Alice', 'Bob'],
      solution: { Alice: 'knight', Bob: 'knave' } as const,
    };
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (response) => {
        expect(verifyCountdown(response, countdownTask).score).toBeGreaterThanOrEqual(0);
        expect(verifyKnightsKnaves(response, kkTask).score).toBeGreaterThanOrEqual(0);
      }),
      { seed: 31, numRuns: 300 },
    );
    const megabyte = 1 << 20;
    for (const input of [
      '('.repeat(megabyte),
      `<answer>${'('.repeat(400)}1${')'.repeat(400)}</answer>`,
      '1+'.repeat(megabyte / 2),
      `<answer>${'Alice '.repeat(megabyte / 6)}</answer>`,
      'Alice'.repeat(megabyte / 5),
      '<answer>'.repeat(megabyte / 8),
    ]) {
      const start = performance.now();
      verifyCountdown(input, countdownTask);
      verifyKnightsKnaves(input, kkTask);
      expect(performance.now() - start).toBeLessThan(3000);
    }
  });
});

describe('puzzle rewards', () => {
  it('should read the task from the sample and give null without one', async () => {
    const reward = countdownReward();
    expect(
      await reward({
        prompt: 'p',
        completion: '<answer>(6 - 2) * 5</answer>',
        answer: { numbers: [2, 5, 6], target: 20 },
      }),
    ).toBe(1);
    expect(await reward({ prompt: 'p', completion: '<answer>1</answer>' })).toBeNull();
    const kk = knightsKnavesReward();
    const task = generateKnightsKnaves({ seed: 3 });
    const answer = task.names.map((name) => `${name} is a ${task.solution[name]}`).join('\n');
    expect(
      await kk({
        prompt: task.prompt,
        completion: `<answer>${answer}</answer>`,
        metadata: { task },
      }),
    ).toBe(1);
  });
});
