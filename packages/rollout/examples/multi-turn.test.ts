import { describe, expect, it } from 'vitest';
import { toolCheckpoint } from '../src/multi-turn/__fixtures__/tool-model.js';
import { rollOut } from './multi-turn.js';

describe('README example: multi-turn rollouts', () => {
  it('rolls out G trajectories with tool results between turns', async () => {
    const trajectories = await rollOut(toolCheckpoint().checkpoint);
    expect(trajectories).toHaveLength(4);
    expect(trajectories.some((trajectory) => trajectory.policyMask.includes(0))).toBe(true);
  });
});
