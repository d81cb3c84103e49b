import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueUnavailableError } from '../errors/queue-unavailable-error.js';
import { policyKey } from '../protocol.js';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import {
  freshQueue,
  HAS_REDIS,
  HAS_REDIS_SERVER,
  REDIS_URL,
  redisServer,
} from '../testing/test-env.js';
import { connectRedis } from './connection.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until a freshly spawned redis-server answers. */
async function untilUp(port: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const client = new Redis(port, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    const up = await client.connect().then(
      () => true,
      () => false,
    );
    client.disconnect();
    if (up) return;
    await sleep(25);
  }
  throw new Error(`redis-server on port ${port} did not start`);
}

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
  await untilUp(EVICTING_PORT);
});
afterAll(() => {
  evicting.kill('SIGKILL');
});

describe.skipIf(!(HAS_REDIS && HAS_REDIS_SERVER))('connectRedis', () => {
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

  it('a sample() waiting on a Redis that goes away (and stays away past reconnectTimeoutMs) rejects with QueueUnavailableError instead of hanging', async () => {
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
    await untilUp(port);
    const queue = freshQueue('gone');
    const sampler = await createQueueSampler({
      redis: `redis://127.0.0.1:${port}`,
      queue,
      reconnectTimeoutMs: 500,
    });
    const probe = new Redis(port, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      const pending = sampler.sample({ prompts: ['1'], n: 2, maxNewTokens: 2, seed: 1 });
      pending.catch(() => undefined);
      // until both jobs are queued (there is no worker)
      while ((await probe.llen(`bull:${queue}:wait`)) < 2) await sleep(20);
      server.kill('SIGKILL'); // a crash: the (unpersisted) jobs are gone
      const error = await pending.catch((e: unknown) => e);
      expect(QueueUnavailableError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ reason: 'unreachable' });
      expect((error as Error).message).toMatch(/did not come back within 500 ms/);
      await expect(sampler.sample({ prompts: ['1'], n: 1, maxNewTokens: 2 })).rejects.toSatisfy(
        (e) => QueueUnavailableError.isInstance(e),
      );
    } finally {
      probe.disconnect();
      await sampler.close();
      server.kill('SIGKILL');
    }
  });

  it('updateWeights while Redis is away keeps the new version, and writes its pointer once Redis is back', async () => {
    const server = await redisServer();
    await server.start();
    const queue = freshQueue('away');
    const weights = await mkdtemp(join(tmpdir(), 'rlvr-away-'));
    const sampler = await createQueueSampler({ redis: server.url, queue, weights });
    try {
      await server.kill();
      const tensors = [{ name: 'w', shape: [2], data: new Float32Array([1, 2]) }];
      await sampler.updateWeights!({ step: 3, tensors });
      expect(sampler.policyVersion).toBe(3);
      await server.start(); // empty: the pointer was never written
      const probe = new Redis(server.port);
      let pointer: string | null = null;
      for (let tries = 0; tries < 200 && pointer === null; tries++) {
        pointer = await probe.get(policyKey(queue));
        if (pointer === null) await sleep(25);
      }
      probe.disconnect();
      expect(JSON.parse(pointer!)).toMatchObject({ version: 3 });
    } finally {
      await sampler.close();
      await server.kill();
      await rm(weights, { recursive: true, force: true });
    }
  });
});
