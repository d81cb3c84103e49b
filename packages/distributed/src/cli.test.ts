import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

function run(...args: string[]) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, out: result.stdout + result.stderr };
}

describe('rlvr-worker', () => {
  it('refuses bad commands and options before touching Redis, naming what is wrong', () => {
    const unknown = run('train');
    expect(unknown.code).toBe(2);
    expect(unknown.out).toContain("unknown command 'train'");

    const missing = run('rollout', '--weights', '/tmp/w', '--redis', 'redis://127.0.0.1:1');
    expect(missing.code).toBe(1);
    expect(missing.out).toContain("'options.checkpoint'");

    const flag = run('verify', '--reward', 'x.mjs');
    expect(flag.code).toBe(1);
    expect(flag.out).toContain('--reward');
  });

  it('exits 1 with a clear message when Redis is unreachable', () => {
    const result = run('verify', '--rewards', 'x.mjs', '--redis', 'redis://127.0.0.1:1');
    expect(result.code).toBe(1);
    expect(result.out).toMatch(/redis:\/\/127\.0\.0\.1:1.*unreachable/);
  });
});
