import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Completion } from '@rlvr/core';
import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import type { VersionedCompletion } from '../protocol.js';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import { createPerJobSampler } from '../sampler/run-job.js';
import {
  freshQueue,
  HAS_REDIS,
  REDIS_URL,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../testing/test-env.js';

let root: string;
let checkpointDir: string;
let weightsDir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-rollout-worker-'));
  checkpointDir = join(root, 'model');
  weightsDir = join(root, 'weights');
  await saveTinyCheckpoint(checkpointDir);
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await rm(root, { recursive: true, force: true });
});

async function start(queue: string, ...extra: string[]): Promise<WorkerProcess> {
  const worker = await spawnWorker([
    '--redis',
    REDIS_URL,
    '--queue',
    queue,
    '--checkpoint',
    checkpointDir,
    '--weights',
    weightsDir,
    ...extra,
  ]);
  workers.push(worker);
  return worker;
}

let shared: Promise<string> | undefined;
/** A queue served by two worker processes, shared by the tests that do not kill workers. */
function sharedQueue(): Promise<string> {
  shared ??= (async () => {
    const queue = freshQueue('shared');
    await Promise.all([start(queue), start(queue)]);
    return queue;
  })();
  return shared;
}

/** The policy versions the completions report. */
const versions = (groups: Completion[][]) => [
  ...new Set(groups.flat().map((completion) => (completion as VersionedCompletion).policyVersion)),
];
/** The completions without the version the workers add (what an in-process sampler returns). */
const plain = (groups: Completion[][]) =>
  groups.map((group) =>
    group.map((completion) => {
      const { policyVersion: _, ...rest } = completion as VersionedCompletion;
      return rest;
    }),
  );

const REQUEST = {
  prompts: ['1+2=', '3+4=', '5+5='],
  n: 4,
  maxNewTokens: 8,
  temperature: 0.9,
  seed: 11,
};

describe.skipIf(!HAS_REDIS)('rlvr-worker rollout', () => {
  it('two worker processes sample exactly what the same engine samples in-process, before and after a weight update', async () => {
    const queue = await sharedQueue();
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue, weights: weightsDir });
    const checkpoint = await loadCheckpoint(checkpointDir);
    const onnx = await createOnnxSampler({ checkpoint, workers: 0 });
    const local = createPerJobSampler(onnx);
    try {
      const remote = await sampler.sample(REQUEST);
      expect(versions(remote)).toEqual([0]); // each completion reports the weights that sampled it
      expect(plain(remote)).toEqual(await local.sample(REQUEST));
      expect(remote.flat().map((completion) => completion.finishReason)).not.toContain('abort');

      // a new policy: every tensor scaled; workers load it from the weight folder by digest
      const tensors = checkpoint.tensors.map((tensor) => ({
        ...tensor,
        data: tensor.data.map((value) => value * 1.5),
      }));
      await sampler.updateWeights!({ step: 1, tensors });
      await local.updateWeights!({ step: 1, tensors });
      const after = await sampler.sample(REQUEST);
      expect(versions(after)).toEqual([1]);
      expect(plain(after)).toEqual(await local.sample(REQUEST));
      expect(after).not.toEqual(remote);

      // one job per group: batched on one worker, reproduced by the same plan in-process
      const grouped = await createQueueSampler({
        redis: REDIS_URL,
        queue,
        weights: weightsDir,
        jobPer: 'group',
      });
      const localGrouped = createPerJobSampler(onnx, { jobPer: 'group' });
      try {
        await grouped.updateWeights!({ step: 1, tensors });
        const byGroup = await grouped.sample(REQUEST);
        expect(plain(byGroup)).toEqual(await localGrouped.sample(REQUEST));
        expect(byGroup.map((group) => group.length)).toEqual([4, 4, 4]);
      } finally {
        await grouped.close();
      }
    } finally {
      await sampler.close();
      await local.close!();
    }
  });

  it('kill -9 of a worker mid-job: the job is retried by another worker, no group is lost or duplicated', async () => {
    const queue = freshQueue('kill');
    const fast = ['--lock-duration', '2000', '--stalled-interval', '1000'];
    const doomed = await start(queue, ...fast);
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue });
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const inspect = new Queue(queue, { connection: redis });
    const checkpoint = await loadCheckpoint(checkpointDir);
    const local = createPerJobSampler(await createOnnxSampler({ checkpoint, workers: 0 }));
    try {
      const pending = sampler.sample(REQUEST);
      // the first job of a fresh worker includes loading the model in its child: kill it then
      let active: string | undefined;
      for (let tries = 0; tries < 400 && active === undefined; tries++) {
        active = (await inspect.getActive())[0]?.id;
        if (active === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(active).toBeDefined();
      await doomed.stop(); // SIGKILL to the worker's process group (its sandboxed child included)
      await start(queue, ...fast);
      const groups = await pending;
      expect(plain(groups)).toEqual(await local.sample(REQUEST)); // every group, each completion once
      const retried = await inspect.getJob(active!);
      expect(await retried!.getState()).toBe('completed');
      expect(retried!.stalledCounter).toBe(1); // it ran again after the kill
    } finally {
      await inspect.close();
      redis.disconnect();
      await sampler.close();
      await local.close!();
    }
  });

  it('a job the worker cannot sample (a token id outside the vocabulary) ends in the failed set with its reason, without retries', async () => {
    const queue = await sharedQueue();
    const sampler = await createQueueSampler({
      redis: REDIS_URL,
      queue,
      attempts: 3,
      backoffMs: 10,
    });
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const inspect = new Queue(queue, { connection: redis });
    try {
      const error = await sampler
        .sample({ prompts: [[1, 2, 9999]], n: 1, maxNewTokens: 4, seed: 1 })
        .catch((caught: unknown) => caught);
      expect(QueueJobFailedError.isInstance(error)).toBe(true);
      expect((error as QueueJobFailedError).failedReason).toContain('request.prompts[0]');
      const job = await inspect.getJob((error as QueueJobFailedError).jobId);
      expect(await job!.getState()).toBe('failed');
      expect(job!.attemptsMade).toBe(1); // a deterministic error is not retried
    } finally {
      await inspect.close();
      redis.disconnect();
      await sampler.close();
    }
  });
});
