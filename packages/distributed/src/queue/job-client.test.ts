import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Completion } from '@rlvr/core';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutJobData, VerifyJobData, VerifyJobResult } from '../protocol.js';
import { createQueueReward } from '../reward/queue-reward.js';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import {
  freshQueue,
  HAS_REDIS_SERVER,
  type RedisServer,
  redisServer,
} from '../testing/test-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-job-client-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** In-process BullMQ workers standing in for `rlvr-worker`: 60 ms per job; counts the runs. */
function fakeWorkers(server: RedisServer, rolloutQueue: string, verifyQueue: string) {
  const runs = new Map<string, number>();
  const count = (job: Job) => runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1);
  const connection = () => {
    const redis = new Redis(server.port, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    return redis;
  };
  const options = () => ({
    connection: connection(),
    lockDuration: 1_000,
    stalledInterval: 500,
  });
  const rollout = new Worker<RolloutJobData>(
    rolloutQueue,
    async (job): Promise<Completion[]> => {
      count(job);
      await sleep(60);
      return [{ text: `s${job.data.seed}`, tokenIds: [1], logprobs: [0], finishReason: 'stop' }];
    },
    { ...options(), concurrency: 2 },
  );
  const verify = new Worker<VerifyJobData>(
    verifyQueue,
    async (job): Promise<VerifyJobResult> => {
      count(job);
      await sleep(60);
      return { value: job.data.input.completion.length };
    },
    options(),
  );
  for (const worker of [rollout, verify]) worker.on('error', () => undefined);
  return {
    runs,
    close: () => Promise.all([rollout.close(true), verify.close(true)]),
  };
}

/** Samples 16 jobs and scores 4 inputs with Redis killed mid-call and restarted 200 ms later. */
async function throughRestart(server: RedisServer) {
  const rolloutQueue = freshQueue('restart');
  const verifyQueue = freshQueue('restart-verify');
  const workers = fakeWorkers(server, rolloutQueue, verifyQueue);
  const sampler = await createQueueSampler({ redis: server.url, queue: rolloutQueue });
  const reward = await createQueueReward({
    redis: server.url,
    queue: verifyQueue,
    reward: 'length',
  });
  const probe = new Redis(server.port, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    const request = { prompts: ['a', 'b', 'c', 'd'], n: 4, maxNewTokens: 2, seed: 3 };
    const sampled = sampler.sample(request);
    const inputs = ['x', 'xx', 'xxx', 'xxxx'].map((completion) => ({ prompt: 'p', completion }));
    const scored = Promise.all(inputs.map((input) => reward(input)));
    // once some jobs are done and others are not
    while ((await probe.zcard(`bull:${rolloutQueue}:completed`)) < 3) await sleep(5);
    probe.disconnect();
    await server.kill();
    await sleep(200);
    await server.start();
    const groups = await sampled;
    const scores = await scored;
    const again = await sampler.sample(request); // finds the jobs done: no new runs
    return { groups, again, scores, runs: workers.runs };
  } finally {
    probe.disconnect();
    await Promise.all([sampler.close(), reward.close()]);
    await workers.close();
  }
}

describe.skipIf(!HAS_REDIS_SERVER)('queue calls through a Redis restart', () => {
  it('without persistence: the jobs Redis lost are added again and the calls resolve in full', async () => {
    const server = await redisServer();
    await server.start();
    try {
      const { groups, again, scores, runs } = await throughRestart(server);
      expect(groups.map((group) => group.length)).toEqual([4, 4, 4, 4]);
      expect(new Set(groups.flat().map((completion) => completion.text)).size).toBe(16);
      expect(again).toEqual(groups);
      expect(scores).toEqual([1, 2, 3, 4]);
      // jobs done before the crash were lost with it and ran again
      expect([...runs.values()].some((count) => count > 1)).toBe(true);
    } finally {
      await server.kill();
    }
  });

  it('with an append-only file: jobs done before the restart are not run again', async () => {
    const server = await redisServer({ aofDir: root });
    await server.start();
    try {
      const { groups, again, scores, runs } = await throughRestart(server);
      expect(groups.map((group) => group.length)).toEqual([4, 4, 4, 4]);
      expect(again).toEqual(groups);
      expect(scores).toEqual([1, 2, 3, 4]);
      // only the jobs running at the crash may run twice (their locks expired meanwhile)
      const twice = [...runs.values()].filter((count) => count > 1).length;
      expect(twice).toBeLessThanOrEqual(3); // 2 rollout slots and 1 verifier slot
      expect(runs.size).toBe(16 + 4);
    } finally {
      await server.kill();
    }
  });
});
