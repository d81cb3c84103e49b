import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueUnavailableError } from '../errors/queue-unavailable-error.js';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import { REDIS_URL } from '../testing/test-env.js';
import { connectRedis } from './connection.js';

// A second, throw-away Redis whose eviction policy would drop queued jobs.
const EVICTING_PORT = 20_000 + (process.pid % 10_000);
let evicting: ChildProcess;
beforeAll(async () => {
  evicting = spawn(
    'redis-server',
    [
      '--port',
      String(EVICTING_PORT),
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'allkeys-lru',
    ],
    { stdio: 'ignore' },
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
});
afterAll(() => {
  evicting.kill('SIGKILL');
});

describe('connectRedis', () => {
  it('connects to a noeviction Redis', async () => {
    const connection = await connectRedis(REDIS_URL, 'worker');
    expect(await connection.ping()).toBe('PONG');
    connection.disconnect();
  });

  it('throws QueueUnavailableError (unreachable) for a server that is not there, quickly', async () => {
    const started = Date.now();
    const error = await createQueueSampler({ redis: 'redis://127.0.0.1:1' }).catch(
      (e: unknown) => e,
    );
    expect(QueueUnavailableError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', reason: 'unreachable' });
    expect((error as Error).message).toContain('redis://127.0.0.1:1');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("throws QueueUnavailableError (eviction-policy) when maxmemory-policy is not 'noeviction'", async () => {
    const error = await connectRedis(`redis://127.0.0.1:${EVICTING_PORT}`, 'producer').catch(
      (e: unknown) => e,
    );
    expect(QueueUnavailableError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'eviction-policy' });
    expect((error as Error).message).toContain("'allkeys-lru'");
    expect((error as Error).message).toContain('noeviction');
  });

  it('a sample() waiting on a Redis that goes away rejects with QueueUnavailableError instead of hanging', async () => {
    const port = EVICTING_PORT + 1;
    const server = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: 'ignore' },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sampler = await createQueueSampler({ redis: `redis://127.0.0.1:${port}` });
    try {
      const pending = sampler.sample({ prompts: ['1'], n: 2, maxNewTokens: 2, seed: 1 });
      pending.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 200)); // jobs queued, no worker
      server.kill('SIGKILL'); // a crash: the (unpersisted) jobs are gone
      const error = await pending.catch((e: unknown) => e);
      expect(QueueUnavailableError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ reason: 'unreachable' });
      await expect(sampler.sample({ prompts: ['1'], n: 1, maxNewTokens: 2 })).rejects.toSatisfy(
        (e) => QueueUnavailableError.isInstance(e),
      );
    } finally {
      await sampler.close();
      server.kill('SIGKILL');
    }
  });
});
