import { ErrorCode } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import {
  checkInstructions,
  checkR1Format,
  combineRewards,
  countdownReward,
  createCodeReward,
  createCountdownVerifier,
  createInstructionVerifier,
  createKnightsKnavesVerifier,
  createMathVerifier,
  createMathVerifierPool,
  createR1FormatVerifier,
  createSandboxPool,
  extractAnswer,
  extractCode,
  generateCountdown,
  generateKnightsKnaves,
  instructionReward,
  knightsKnavesReward,
  lengthPenaltyReward,
  mathEquivalent,
  mathReward,
  r1FormatReward,
  repetitionPenaltyReward,
  runTests,
  verifierReward,
  verifyCountdown,
  verifyKnightsKnaves,
  verifyMath,
} from './index.js';

async function failure(run: () => unknown): Promise<{ code?: string; message: string }> {
  try {
    await run();
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('expected an error');
}

const kk = { names: ['A'], solution: { A: 'knight' as const } };

describe('verifiers options', () => {
  it('should reject an unknown key of every options object, naming the closest valid one', async () => {
    const cases: [() => unknown, RegExp][] = [
      [() => mathEquivalent('1', '1', { tolerence: 0.1 } as never), /did you mean 'tolerance'\?/],
      [() => verifyMath('1', '1', { tolerence: 0.1 } as never), /did you mean 'tolerance'\?/],
      [() => mathReward({ tolerence: 0.1 } as never), /did you mean 'tolerance'\?/],
      [() => createMathVerifier({ question_from_prompt: false } as never), /'questionFromPrompt'/],
      [() => extractAnswer('1', { fallbak: 'none' } as never), /did you mean 'fallback'\?/],
      [() => createMathVerifierPool({ worker: 2 } as never), /'options\.worker'/],
      [
        () => createMathVerifierPool({ verifyOptions: { tolerence: 0.1 } } as never),
        /'options\.verifyOptions\.tolerence'.*did you mean 'tolerance'\?/,
      ],
      [
        () => createCodeReward({ language: 'python', partial_credit: true } as never),
        /did you mean 'partialCredit'\?/,
      ],
      [
        () => createCodeReward({ language: 'python', limits: { wallTime: 1000 } } as never),
        /did you mean 'wallTimeMs'\?/,
      ],
      [
        () => runTests({ language: 'python', program: '', tests: 'assert 1', timeout: 5 } as never),
        /'options\.timeout'/,
      ],
      [() => extractCode('x', { lang: 'python' } as never), /did you mean 'language'\?/],
      [() => createSandboxPool({ concurency: 2 } as never), /did you mean 'concurrency'\?/],
      [
        () => checkR1Format('x', { requireThink: false } as never),
        /did you mean 'requireThinkOpen'\?/,
      ],
      [() => r1FormatReward({ requireThink: false } as never), /did you mean 'requireThinkOpen'\?/],
      [() => createR1FormatVerifier({ requireThink: false } as never), /'requireThinkOpen'/],
      [() => instructionReward({ constraint: [] } as never), /did you mean 'constraints'\?/],
      [
        () => checkInstructions('x', [{ type: 'word-count', maximum: 3 } as never]),
        /'constraints\[0\]\.maximum'.*did you mean 'max'\?/,
      ],
      [
        () => checkInstructions('x', [{ type: 'no-commas', min: 1 } as never]),
        /'constraints\[0\]\.min'/,
      ],
      [
        () => combineRewards({ rewards: [{ name: 'a', fn: () => 1 }], mdoe: 'sum' } as never),
        /did you mean 'mode'\?/,
      ],
      [
        () => combineRewards({ rewards: [{ name: 'a', fn: () => 1, wieght: 2 }] } as never),
        /'options\.rewards\[0\]\.wieght'.*did you mean 'weight'\?/,
      ],
      [
        () => lengthPenaltyReward({ maxLength: 8, bufferLength: 2, penalty_factor: 1 } as never),
        /did you mean 'penaltyFactor'\?/,
      ],
      [() => repetitionPenaltyReward({ ngram_size: 2 } as never), /did you mean 'ngramSize'\?/],
      [
        () => verifierReward(createMathVerifier(), { reference: () => 1 } as never),
        /did you mean 'referenceOf'\?/,
      ],
      [() => generateCountdown({ seed: 1, dificulty: 2 } as never), /did you mean 'difficulty'\?/],
      [() => generateKnightsKnaves({ seed: 1, level: 2 } as never), /'options\.level'/],
      [
        () => verifyCountdown('x', { numbers: [1], target: 1 }, { useAll: true } as never),
        /did you mean 'useAllNumbers'\?/,
      ],
      [() => countdownReward({ formatscore: 0.1 } as never), /did you mean 'formatScore'\?/],
      [() => createCountdownVerifier({ integer_steps: true } as never), /'integerSteps'/],
      [() => verifyKnightsKnaves('x', kk, { partial: true } as never), /'partialCredit'/],
      [() => knightsKnavesReward({ partial: true } as never), /'partialCredit'/],
      [() => createKnightsKnavesVerifier({ partial: true } as never), /'partialCredit'/],
    ];
    for (const [run, message] of cases) {
      const error = await failure(run);
      expect(error.code, error.message).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(error.message).toMatch(message);
    }
    expect(createInstructionVerifier().name).toBe('instructions');
  });

  it('should reject options that have no effect in the combination', async () => {
    const cases: (() => unknown)[] = [
      () => createCodeReward({ language: 'javascript', pythonPath: '/usr/bin/python3' }),
      () =>
        runTests({
          language: 'javascript',
          program: '',
          tests: 'x',
          pythonPath: '/usr/bin/python3',
        }),
      () => lengthPenaltyReward({ maxLength: 8, bufferLength: 2, charsPerToken: 3 }),
      () => mathReward({ question: 'What is 2+2?' }),
    ];
    for (const run of cases) {
      expect((await failure(run)).code).toBe(ErrorCode.INEFFECTIVE_OPTION);
    }
    // The valid forms still work.
    const penalty = lengthPenaltyReward({
      maxLength: 8,
      bufferLength: 2,
      fallback: 'characters',
      charsPerToken: 1,
    });
    expect(penalty({ prompt: '', completion: 'abcdefg' })).toBeCloseTo(-0.5);
    expect(mathReward({ question: 'q', questionFromPrompt: false })).toBeTypeOf('function');
  });
});
