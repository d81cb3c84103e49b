import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import { createQueueReward } from '../reward/queue-reward.js';
import {
  freshQueue,
  HAS_REDIS,
  REDIS_URL,
  spawnWorker,
  type WorkerProcess,
} from '../testing/test-env.js';

// The user's rewards module: what `rlvr-worker verify --rewards FILE` loads.
const REWARDS = `
const busy = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} };
export default {
  exact: ({ completion, answer }) => (completion.trim() === String(answer) ? 1 : 0),
  length: ({ completion }) => (completion.length === 0 ? null : completion.length),
  // CPU-bound for 1.5 s: blocks its process, as a slow checker would
  slow: ({ completion }) => { busy(1500); return completion.length; },
  broken: () => { throw new Error('checker crashed'); },
};
`;

let root: string;
let rewardsFile: string;
let redis: Redis;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-verify-worker-'));
  rewardsFile = join(root, 'rewards.mjs');
  await writeFile(rewardsFile, REWARDS);
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  redis.disconnect();
  await rm(root, { recursive: true, force: true });
});

async function start(queue: string, ...extra: string[]) {
  const worker = await spawnWorker(
    ['--redis', REDIS_URL, '--queue', queue, '--rewards', rewardsFile, ...extra],
    'verify',
  );
  workers.push(worker);
  return worker;
}

describe.skipIf(!HAS_REDIS)('rlvr-worker verify + createQueueReward', () => {
  it('scores through the workers; the same input is one job; failures name the reason', async () => {
    const queue = freshQueue('verify');
    await start(queue);
    const exact = await createQueueReward({ redis: REDIS_URL, reward: 'exact', queue });
    const length = await createQueueReward({ redis: REDIS_URL, reward: 'length', queue });
    const broken = await createQueueReward({
      redis: REDIS_URL,
      reward: 'broken',
      queue,
      attempts: 2,
      backoffMs: 10,
    });
    const missing = await createQueueReward({ redis: REDIS_URL, reward: 'nope', queue });
    const inspect = new Queue(queue, { connection: redis });
    try {
      const input = { prompt: '1+1=', completion: ' 2', answer: '2' };
      const scores = await Promise.all([
        exact(input),
        exact(input), // the same job: scored once
        exact({ ...input, completion: '3' }),
        length({ ...input, completion: '' }),
      ]);
      expect(scores).toEqual([1, 1, 0, null]);
      expect(await inspect.getJobCountByTypes('completed')).toBe(3);

      const failure = await broken(input).catch((error: unknown) => error);
      expect(QueueJobFailedError.isInstance(failure)).toBe(true);
      expect((failure as QueueJobFailedError).failedReason).toContain('checker crashed');
      expect((await inspect.getJob((failure as QueueJobFailedError).jobId))!.attemptsMade).toBe(2);

      // a job that uses up its attempts during this call is a failure of this call, never an
      // "earlier failure" to run again (it was retried a third time when it failed fast)
      const once = await createQueueReward({
        redis: REDIS_URL,
        reward: 'broken',
        queue,
        attempts: 1,
      });
      try {
        const failures = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            once({ ...input, completion: `fast failure ${i}` }).catch((error: unknown) => error),
          ),
        );
        const made = await Promise.all(
          failures.map(
            async (error) =>
              (await inspect.getJob((error as QueueJobFailedError).jobId))!.attemptsMade,
          ),
        );
        expect(made).toEqual(Array(8).fill(1));
      } finally {
        await once.close();
      }

      const unknown = await missing(input).catch((error: unknown) => error);
      expect((unknown as QueueJobFailedError).failedReason).toMatch(
        /unknown reward 'nope'.*exact, length, slow, broken/,
      );
    } finally {
      await inspect.close();
      await Promise.all([exact, length, broken, missing].map((reward) => reward.close()));
    }
  });

  it('kill -9 of a verifier worker mid-job: the job is retried by another worker and scored once', async () => {
    const queue = freshQueue('verify-kill');
    const fast = ['--lock-duration', '2000', '--stalled-interval', '1000'];
    const doomed = await start(queue, ...fast);
    const slow = await createQueueReward({ redis: REDIS_URL, reward: 'slow', queue });
    const inspect = new Queue(queue, { connection: redis });
    try {
      const pending = slow({ prompt: 'p', completion: 'abcd' });
      let active: string | undefined;
      for (let tries = 0; tries < 400 && active === undefined; tries++) {
        active = (await inspect.getActive())[0]?.id;
        if (active === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(active).toBeDefined();
      await doomed.stop();
      await start(queue, ...fast);
      expect(await pending).toBe(4);
      const job = await inspect.getJob(active!);
      expect(job!.stalledCounter).toBe(1);
      expect(await inspect.getJobCountByTypes('completed')).toBe(1);
    } finally {
      await inspect.close();
      await slow.close();
    }
  });
});
