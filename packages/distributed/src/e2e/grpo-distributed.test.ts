import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashFloat32, type Sampler } from '@rlvr/core';
import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import {
  createGrpoTrainer,
  createLlamaModel,
  type GrpoMetricRecord,
  selectBackend,
} from '@rlvr/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueSampler } from '../sampler/queue-sampler.js';
import { createPerJobSampler } from '../sampler/run-job.js';
import {
  freshQueue,
  REDIS_URL,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../testing/test-env.js';

let root: string;
let checkpointDir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-distributed-'));
  checkpointDir = join(root, 'model');
  await saveTinyCheckpoint(checkpointDir);
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await rm(root, { recursive: true, force: true });
});

const dataset = Array.from({ length: 8 }, (_, index) => ({
  id: `q${index}`,
  prompt: `${index % 5}+${index % 3}=`,
  answer: String((index % 5) + (index % 3)),
}));

/** A dense reward (share of digits), so every group has variance and every step updates. */
const digits = (completion: string) =>
  completion.length === 0 ? 0 : (completion.match(/[0-9]/g)?.length ?? 0) / completion.length;

/** Trains 2 GRPO steps with `sampler`; returns the metrics without wall-clock values, and a weight hash. */
async function train(sampler: Sampler) {
  const checkpoint = await loadCheckpoint(checkpointDir);
  const model = await createLlamaModel(checkpoint);
  const records: GrpoMetricRecord[] = [];
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset,
    rewards: [{ name: 'digits', fn: ({ completion }) => digits(completion) }],
    config: {
      maxSteps: 2,
      promptsPerStep: 2,
      groupSize: 4,
      maxNewTokens: 6,
      temperature: 1,
      seed: 5,
      schedule: { learningRate: 0.05 },
      quiet: true,
    },
    onStep: (record) => records.push(record),
  });
  try {
    await grpo.train();
    const weights = hashFloat32(model.toWeightSnapshot(0).tensors.map((tensor) => tensor.data));
    const metrics = records.map((record) =>
      Object.fromEntries(
        Object.entries(record.metrics).filter(
          ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
        ),
      ),
    );
    return { metrics, weights };
  } finally {
    grpo.dispose();
  }
}

describe('GRPO with a queue sampler and two worker processes', () => {
  it('learns exactly what the same run learns in one process (same seed)', async () => {
    const checkpoint = await loadCheckpoint(checkpointDir);
    const local = createPerJobSampler(await createOnnxSampler({ checkpoint, workers: 0 }));
    const expected = await train(local).finally(() => local.close!());

    const queue = freshQueue('grpo');
    const weightsDir = join(root, 'weights');
    const args = ['--redis', REDIS_URL, '--queue', queue, '--checkpoint', checkpointDir];
    workers.push(
      ...(await Promise.all([1, 2].map(() => spawnWorker([...args, '--weights', weightsDir])))),
    );
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue, weights: weightsDir });
    const distributed = await train(sampler).finally(() => sampler.close());

    expect(distributed.metrics).toHaveLength(2);
    expect(distributed.metrics.every((metrics) => (metrics.optimizer_step ?? 0) >= 1)).toBe(true);
    expect(distributed.metrics).toEqual(expected.metrics);
    expect(distributed.weights).toBe(expected.weights);
    expect(sampler.policyVersion).toBeGreaterThanOrEqual(1);
    // both workers took jobs
    for (const worker of workers) expect(worker.output()).toContain('completed v');
  });
});
