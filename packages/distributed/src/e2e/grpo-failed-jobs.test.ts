import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCheckpoint } from '@rlvr/model';
import {
  createGrpoTrainer,
  createLlamaModel,
  type GrpoMetricRecord,
  selectBackend,
} from '@rlvr/trainer';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueueJobFailedError } from '../errors/queue-job-failed-error.js';
import type { RolloutJobData } from '../protocol.js';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import { freshQueue, HAS_REDIS, REDIS_URL, saveTinyCheckpoint } from '../testing/test-env.js';
import processRollout from '../worker/rollout-processor.js';
import { WORKER_ENV } from '../worker/worker-env.js';

let root: string;
let checkpointDir: string;
let weightsDir: string;
beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-failed-'));
  checkpointDir = join(root, 'model');
  weightsDir = join(root, 'weights');
  await saveTinyCheckpoint(checkpointDir);
  // the worker's processor, run in this process (what `rlvr-worker rollout` runs in its children)
  process.env[WORKER_ENV.checkpoint] = checkpointDir;
  process.env[WORKER_ENV.weights] = weightsDir;
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const POISON = '4+4=';

describe.skipIf(!HAS_REDIS)("GRPO with failedJobs: 'abort-group'", () => {
  it('skips the prompt whose jobs keep failing, counts it, reports the reason, and trains on the rest', async () => {
    const queue = freshQueue('grpo-failed');
    const worker = new Worker<RolloutJobData>(
      queue,
      async (job: Job<RolloutJobData>) => {
        if (job.data.prompt === POISON) throw new Error('verifier sandbox crashed');
        return processRollout(job);
      },
      { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }) },
    );
    const failures: QueueJobFailedError[] = [];
    const sampler = await createQueueSampler({
      redis: REDIS_URL,
      queue,
      weights: weightsDir,
      attempts: 2,
      backoffMs: 10,
      failedJobs: 'abort-group',
      onJobFailed: (error) => failures.push(error),
    });
    const inspect = new Queue(queue, {
      connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }),
    });
    const records: GrpoMetricRecord[] = [];
    try {
      const model = await createLlamaModel(await loadCheckpoint(checkpointDir));
      const grpo = await createGrpoTrainer({
        model,
        sampler,
        dataset: ['1+2=', POISON, '2+5=', '3+1='].map((prompt, index) => ({
          id: `q${index}`,
          prompt,
        })),
        rewards: [{ name: 'length', fn: ({ completion }) => completion.length / 6 }],
        config: {
          maxSteps: 2,
          promptsPerStep: 2,
          groupSize: 2,
          maxNewTokens: 6,
          seed: 3,
          shuffle: false,
          schedule: { learningRate: 0.01 },
          quiet: true,
        },
        onStep: (record) => records.push(record),
      });
      const result = await grpo.train();
      grpo.dispose();
      expect(result.steps).toBe(2);
      const aborted = records.map((record) => record.metrics['skipped/aborted_groups']);
      expect(aborted).toEqual([1, 0]); // step 1 holds the poisoned prompt
      expect(failures).toHaveLength(2); // its 2 samples
      expect(failures[0]!.failedReason).toContain('verifier sandbox crashed');
      const job = await inspect.getJob(failures[0]!.jobId);
      expect(await job!.getState()).toBe('failed');
      expect(job!.attemptsMade).toBe(2);
    } finally {
      await worker.close();
      await inspect.close();
      await sampler.close();
    }
  });
});
