import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbortedError, assertSampler, type Completion, InvalidArgumentError } from '@rlvr/core';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import { policyKey, type RolloutJobData } from '../protocol.js';
import { freshQueue, HAS_REDIS, REDIS_URL } from '../testing/test-env.js';
import { createQueueSampler } from './queue-sampler.js';

let root: string;
let redis: Redis;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-queue-sampler-'));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis.disconnect();
  await rm(root, { recursive: true, force: true });
});

/** An in-process BullMQ worker that answers each job with a completion naming it. */
function echoWorker(queue: string, processed: string[], fail?: string) {
  return new Worker<RolloutJobData>(
    queue,
    async (job) => {
      processed.push(job.id!);
      if (fail) throw new Error(fail);
      const { promptIndex, sampleIndex, seed, weights, n } = job.data;
      return Array.from(
        { length: n },
        (_, offset): Completion => ({
          text: `${promptIndex}/${sampleIndex + offset}/${seed}/${weights}`,
          tokenIds: [1],
          logprobs: [-0.5],
          finishReason: 'stop',
        }),
      );
    },
    { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }) },
  );
}

describe.skipIf(!HAS_REDIS)('createQueueSampler', () => {
  it('is a core Sampler and rejects unknown options by name', async () => {
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue: freshQueue('shape') });
    try {
      assertSampler(sampler);
      expect(sampler.updateWeights).toBeUndefined(); // no weight folder: cannot take weights
    } finally {
      await sampler.close();
    }
    await expect(
      createQueueSampler({ redis: REDIS_URL, queu: 'x' } as never),
    ).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      message: expect.stringContaining("'queue'"),
    });
    await expect(createQueueSampler({ redis: REDIS_URL, queue: 'a:b' })).rejects.toSatisfy(
      (error) => InvalidArgumentError.isInstance(error),
    );
  });

  it('adds one job per (prompt, sample) with idempotent ids: a repeated request adds no job', async () => {
    const queue = freshQueue('idem');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue });
    const processed: string[] = [];
    const worker = echoWorker(queue, processed);
    try {
      const request = { prompts: ['1+1=', [5, 6]], n: 3, maxNewTokens: 4, seed: 7 };
      const [first, second] = await Promise.all([sampler.sample(request), sampler.sample(request)]);
      const third = await sampler.sample(request);
      expect(first.map((group) => group.length)).toEqual([3, 3]);
      expect(second).toEqual(first);
      expect(third).toEqual(first);
      expect(processed).toHaveLength(6); // the same 6 job ids, each processed once
      expect(new Set(processed).size).toBe(6);
      for (const id of processed) expect(id).toMatch(/^v0-[0-9a-f]+-[01]-[0-2]$/);
      expect(first[1]![2]!.text.startsWith('1/2/')).toBe(true); // result[prompt][sample]
      await sampler.sample({ ...request, seed: 8 });
      expect(processed).toHaveLength(12); // another seed is another request
    } finally {
      await worker.close();
      await sampler.close();
    }
  });

  it('rejects a worker result of the wrong shape (a worker of another version) by job id', async () => {
    const queue = freshQueue('skew');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue });
    const worker = new Worker(queue, async () => ({ text: 'old protocol' }), {
      connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }),
    });
    try {
      await expect(
        sampler.sample({ prompts: ['1'], n: 1, maxNewTokens: 2, seed: 1 }),
      ).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/job 'v0-[0-9a-f]+-0-0' returned object instead of 1/),
      });
    } finally {
      await worker.close();
      await sampler.close();
    }
  });

  it("jobPer: 'group' adds one job per prompt for its whole group", async () => {
    const queue = freshQueue('group');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue, jobPer: 'group' });
    const processed: string[] = [];
    const worker = echoWorker(queue, processed);
    try {
      const groups = await sampler.sample({ prompts: ['1', '2'], n: 3, maxNewTokens: 2, seed: 1 });
      expect(processed).toHaveLength(2);
      for (const id of processed) expect(id).toMatch(/^v0-[0-9a-f]+-[01]-g$/);
      expect(
        groups.map((group) =>
          group.map((completion) => completion.text.split('/').slice(0, 2).join('/')),
        ),
      ).toEqual([
        ['0/0', '0/1', '0/2'],
        ['1/0', '1/1', '1/2'],
      ]);
      await expect(
        createQueueSampler({ redis: REDIS_URL, queue, jobPer: 'prompt' as never }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await worker.close();
      await sampler.close();
    }
  });

  it('rejects an aborted call with AbortedError and removes its queued jobs', async () => {
    const queue = freshQueue('abort');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue });
    const inspect = new Queue(queue, { connection: redis });
    try {
      const before = new AbortController();
      before.abort('stop');
      await expect(
        sampler.sample({ prompts: ['1'], n: 2, maxNewTokens: 2 }, { signal: before.signal }),
      ).rejects.toSatisfy((error) => AbortedError.isInstance(error));
      expect(await inspect.getJobCountByTypes('waiting', 'active')).toBe(0); // nothing was added

      const controller = new AbortController();
      const pending = sampler.sample(
        { prompts: ['1', '2'], n: 2, maxNewTokens: 2, seed: 1 },
        { signal: controller.signal },
      );
      setTimeout(() => controller.abort('user'), 100); // no worker: the jobs wait
      await expect(pending).rejects.toSatisfy((error) => AbortedError.isInstance(error));
      expect(await inspect.getJobCountByTypes('waiting', 'active', 'delayed')).toBe(0);
    } finally {
      await inspect.close();
      await sampler.close();
    }
  });

  it('rejects with QueueJobFailedError once a job has failed every attempt; it stays in the failed set with its reason', async () => {
    const queue = freshQueue('fail');
    const sampler = await createQueueSampler({
      redis: REDIS_URL,
      queue,
      attempts: 2,
      backoffMs: 10,
    });
    const processed: string[] = [];
    const worker = echoWorker(queue, processed, 'worker crashed on purpose');
    const inspect = new Queue(queue, { connection: redis });
    try {
      const error = await sampler
        .sample({ prompts: ['1'], n: 1, maxNewTokens: 2, seed: 3 })
        .catch((caught: unknown) => caught);
      expect(QueueJobFailedError.isInstance(error)).toBe(true);
      const failed = error as QueueJobFailedError;
      expect(failed.failedReason).toContain('worker crashed on purpose');
      expect(failed.message).toContain(failed.jobId);
      expect(processed).toEqual([failed.jobId, failed.jobId]); // both attempts ran
      const job = await inspect.getJob(failed.jobId);
      expect(await job!.getState()).toBe('failed');
      expect(job!.failedReason).toContain('worker crashed on purpose');
      expect(job!.attemptsMade).toBe(2);
    } finally {
      await worker.close();
      await inspect.close();
      await sampler.close();
    }
  });

  it('a later call for a job id in the failed set runs it again (an earlier failure is not replayed)', async () => {
    const queue = freshQueue('refail');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue, attempts: 1 });
    const processed: string[] = [];
    const broken = echoWorker(queue, processed, 'misconfigured worker');
    const request = { prompts: ['1'], n: 2, maxNewTokens: 2, seed: 4 };
    try {
      await expect(sampler.sample(request)).rejects.toSatisfy((error) =>
        QueueJobFailedError.isInstance(error),
      );
      await broken.close();
      const fixed = echoWorker(queue, processed);
      try {
        const groups = await sampler.sample(request); // same request, same job ids
        expect(groups[0]).toHaveLength(2);
        expect(groups[0]!.map((completion) => completion.finishReason)).toEqual(['stop', 'stop']);
      } finally {
        await fixed.close();
      }
    } finally {
      await broken.close();
      await sampler.close();
    }
  });

  it('updateWeights stores content-addressed safetensors and the version in Redis, never the weights', async () => {
    const queue = freshQueue('weights');
    const weights = join(root, 'weights');
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue, weights });
    const processed: string[] = [];
    const worker = echoWorker(queue, processed);
    try {
      const tensors = [{ name: 'w', shape: [2], data: new Float32Array([1, 2]) }];
      await sampler.updateWeights!({ step: 3, tensors });
      await sampler.updateWeights!({ step: 3, tensors }); // same bytes: same file
      const files = await readdir(weights);
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/^sha256-[0-9a-f]{64}\.safetensors$/);
      const pointer = JSON.parse((await redis.get(policyKey(queue)))!);
      expect(pointer).toMatchObject({ version: 3, weights: files[0]!.slice(7, 71) });
      const groups = await sampler.sample({
        prompts: ['1'],
        n: 1,
        maxNewTokens: 1,
        seed: 1,
      });
      expect(groups[0]![0]!.text.endsWith(`/${pointer.weights}`)).toBe(true); // the job names the digest
      expect(processed[0]).toMatch(/^v3-/);
      await expect(sampler.updateWeights!({ step: -1, tensors } as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    } finally {
      await worker.close();
      await sampler.close();
    }
  });
});
