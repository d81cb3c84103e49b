import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors/error-codes.js';
import { validateEnvironmentReset, validateEnvironmentStep } from './environment.js';
import {
  isMultiTurnSampler,
  type Trajectory,
  validateTrajectory,
  validateTrajectoryRequest,
} from './trajectory.js';

/** Two turns: 3 policy tokens, 2 environment tokens, 2 policy tokens. */
function trajectory(): Trajectory {
  return {
    text: 'a<tool_call>b',
    tokenIds: [5, 6, 7, 8, 9, 10, 11],
    logprobs: [-0.1, -0.2, -0.3, 0, 0, -0.4, -0.5],
    policyMask: [1, 1, 1, 0, 0, 1, 1],
    finishReason: 'stop',
    endReason: 'done',
    environmentReward: 1,
    messages: [{ role: 'user', content: 'q' }],
    turns: [
      {
        start: 0,
        end: 3,
        environmentEnd: 5,
        finishReason: 'tool-call',
        text: 'a',
        toolCalls: 1,
        malformedToolCalls: 0,
        toolResults: [{ name: 'calculator', status: 'ok', durationMs: 1 }],
      },
      {
        start: 5,
        end: 7,
        environmentEnd: 7,
        finishReason: 'stop',
        text: 'b',
        toolCalls: 0,
        malformedToolCalls: 0,
        toolResults: [],
      },
    ],
  };
}

describe('validateTrajectory', () => {
  it('accepts turns that cover the tokens with the mask they imply', () => {
    expect(() => validateTrajectory(trajectory(), 't', 'f')).not.toThrow();
  });

  it('names a mask entry that contradicts the turns', () => {
    const bad = trajectory();
    bad.policyMask[3] = 1;
    expect(() => validateTrajectory(bad, 't', 'f')).toThrow(/t\.policyMask\[3\]/);
  });

  it('refuses turns with a gap, a short mask and a non-finite policy logprob', () => {
    const gap = trajectory();
    gap.turns[1]!.start = 6;
    expect(() => validateTrajectory(gap, 't', 'f')).toThrow(/t\.turns\[1\]/);
    const short = trajectory();
    short.policyMask.pop();
    expect(() => validateTrajectory(short, 't', 'f')).toThrow(/t\.policyMask/);
    const nan = trajectory();
    nan.logprobs[5] = Number.NaN;
    expect(() => validateTrajectory(nan, 't', 'f')).toThrow(/t\.logprobs\[5\]/);
    const uncovered = trajectory();
    uncovered.turns.pop();
    expect(() => validateTrajectory(uncovered, 't', 'f')).toThrow(/covering all 7/);
  });
});

describe('environment results', () => {
  it('checks reset and step results, naming the field', () => {
    expect(validateEnvironmentReset({ messages: [{ role: 'user', content: 'x' }] }, 'f')).toEqual({
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(() => validateEnvironmentReset({ messages: [] }, 'f')).toThrow(/at least one/);
    expect(() =>
      validateEnvironmentReset({ messages: [{ role: 'robot', content: '' }] }, 'f'),
    ).toThrow(/messages\[0\]/);
    expect(() =>
      validateEnvironmentReset(
        { messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'a b' }] },
        'f',
      ),
    ).toThrow(/tools\[0\]\.name/);
    expect(() => validateEnvironmentStep({ messages: [], done: false }, 'f')).toThrow(
      /when done is false/,
    );
    expect(() =>
      validateEnvironmentStep({ messages: [], done: true, reward: Number.NaN }, 'f'),
    ).toThrow(/reward/);
    expect(() =>
      validateEnvironmentStep({ done: true, toolResults: [{ name: 'x', status: 'boom' }] }, 'f'),
    ).toThrow(/toolResults/);
    try {
      validateEnvironmentStep({ done: true, rewrad: 1 }, 'f');
      expect.unreachable();
    } catch (error) {
      expect((error as { code: string }).code).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(String(error)).toMatch(/did you mean 'reward'/);
    }
  });
});

describe('validateTrajectoryRequest', () => {
  const base = {
    prompts: [{ prompt: 'x' }],
    n: 2,
    maxNewTokens: 8,
    maxTurns: 3,
    maxTotalTokens: 64,
    environment: () => ({
      reset: () => ({ messages: [] }),
      step: () => ({ messages: [], done: true }),
    }),
  };
  it('accepts a request and names wrong fields', () => {
    expect(validateTrajectoryRequest(base, 'f').maxTurns).toBe(3);
    expect(() => validateTrajectoryRequest({ ...base, maxTurns: 0 }, 'f')).toThrow(
      /request\.maxTurns/,
    );
    expect(() => validateTrajectoryRequest({ ...base, environment: {} }, 'f')).toThrow(
      /request\.environment/,
    );
    expect(() => validateTrajectoryRequest({ ...base, maxTurn: 2 }, 'f')).toThrow(
      /did you mean 'maxTurns'/,
    );
    expect(() => validateTrajectoryRequest({ ...base, prompts: ['x'] }, 'f')).toThrow(
      /request\.prompts\[0\]/,
    );
  });
  it('tells multi-turn samplers apart', () => {
    expect(isMultiTurnSampler({ sample: () => [] })).toBe(false);
    expect(isMultiTurnSampler({ sample: () => [], sampleTrajectories: () => [] })).toBe(true);
  });
});
