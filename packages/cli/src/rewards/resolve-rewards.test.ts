import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REWARDS, resolveRewards } from './resolve-rewards.js';

describe('resolveRewards', () => {
  it('should build the named @rlvr/verifiers rewards with weights and options', async () => {
    const rewards = await resolveRewards(
      ['math', { name: 'r1-format', weight: 0.5 }, { name: 'countdown', options: {} }],
      'grpo.yaml',
    );
    expect(rewards.map(({ name, weight }) => [name, weight])).toEqual([
      ['math', 1],
      ['r1-format', 0.5],
      ['countdown', 1],
    ]);
    const [math, format] = rewards;
    expect(await math!.fn({ prompt: '2+2=', completion: 'so \\boxed{4}', answer: '4' })).toBe(1);
    expect(await math!.fn({ prompt: '2+2=', completion: '5', answer: '4' })).toBe(0);
    expect(await format!.fn({ prompt: '', completion: '<think>a</think><answer>4</answer>' })).toBe(
      1,
    );
    expect(Object.keys(REWARDS)).toEqual(
      expect.arrayContaining(['math', 'r1-format', 'ifeval', 'code', 'countdown']),
    );
  });

  it('should load a reward function from a user module', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlvr-reward-'));
    const path = join(dir, 'reward.mjs');
    writeFileSync(
      path,
      'export const short = ({ completion }) => (completion.length <= 3 ? 1 : 0);\n',
    );
    const [reward] = await resolveRewards(
      [{ module: path, export: 'short', weight: 2 }],
      'grpo.yaml',
    );
    expect(reward).toMatchObject({ name: 'short', weight: 2 });
    expect(await reward!.fn({ prompt: '', completion: 'ab' })).toBe(1);
    await expect(resolveRewards([{ module: path, export: 'long' }], 'grpo.yaml')).rejects.toThrow(
      /rewards\[0\]\.export' \(in grpo\.yaml\): .*no function export 'long' \(function exports: short\)/,
    );
    await expect(
      resolveRewards([{ module: join(dir, 'missing.mjs') }], 'grpo.yaml'),
    ).rejects.toThrow(/cannot import/);
  });

  it('should name an unknown reward, key or weight with the closest valid one and the file', async () => {
    await expect(resolveRewards(['maths'], 'grpo.yaml')).rejects.toThrow(
      /config key 'rewards\[0\]\.name' \(in grpo\.yaml\): unknown reward 'maths' \(did you mean 'math'\?/,
    );
    await expect(resolveRewards([{ name: 'math', wieght: 2 }], 'g.yaml')).rejects.toThrow(
      /rewards\[0\]\.wieght.*did you mean 'weight'/,
    );
    await expect(resolveRewards([{ name: 'math', weight: 'x' }], 'g.yaml')).rejects.toThrow(
      /finite number/,
    );
    await expect(
      resolveRewards([{ name: 'math', options: { fallbak: 'none' } }], 'g.yaml'),
    ).rejects.toThrow(/rewards\[0\]\.options/);
    await expect(resolveRewards(['math', 'math'], 'g.yaml')).rejects.toThrow(
      /duplicate reward name/,
    );
    await expect(resolveRewards([], 'g.yaml')).rejects.toThrow(/expected a list of rewards/);
  });
});
