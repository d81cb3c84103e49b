import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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

describe.skipIf(!HAS_REDIS)('GRPO with a queue sampler and two worker processes', () => {
  it('learns exactly what the same run learns in one process (same seed)', async () => {
    const checkpoint = await loadCheckpoint(checkpointDir);
    const local = createPerJobSampler(await createOnnxSampler({ checkpoint, workers: 0 }));
    const expected = await train(local).finally(() => local.close!());

    queue = freshQueue('grpo');
    await spawnWorkers(queue);
    const weightsDir = join(root, 'weights');
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

  it('runs asynchronous GRPO (maxStaleness 1): groups dated by the version the workers report', async () => {
    // the workers of the test above, if it ran alone: spawn them
    if (workers.length === 0) {
      queue = freshQueue('grpo-async');
      await spawnWorkers(queue);
    }
    const exact = await trainAsync({ seed: 5, maxSteps: 3 });
    // the next step's request goes out before this step's update: staleness 0, then 1
    expect(exact.staleness).toEqual([
      [0, 0, 0],
      [1, 1, 0],
      [1, 1, 0],
    ]);
    expect(exact.reported).toEqual(new Set([0, 1]));
    // each request was trained on in its own step and no other (one request per step)
    expect(exact.calls).toHaveLength(3);
    for (const [index, prompts] of exact.stepPrompts.entries()) {
      expect(prompts).toEqual(exact.calls[index]);
    }

    // Workers that keep the weights they hold while at most one update behind: step 3's groups
    // are sampled by version 0 although their request named version 1; at step 3 that is
    // 2 versions old, over maxStaleness: dropped and counted, never trained on.
    const lagging = await trainAsync({ seed: 6, maxSteps: 4, maxWeightLag: 1 });
    const dropped = lagging.staleness.map(([, , drops]) => drops!);
    expect(dropped.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
    expect(dropped[0]).toBe(0);
    for (const [, max] of lagging.staleness) expect(max).toBeLessThanOrEqual(1);
    for (const [index, prompts] of lagging.stepPrompts.entries()) {
      // what was trained at a step comes from that step's request only
      for (const prompt of prompts) expect(lagging.calls[index]).toContain(prompt);
    }
    expect(lagging.calls).toHaveLength(4);
  });
});

let queue = '';
async function spawnWorkers(name: string) {
  const weightsDir = join(root, 'weights');
  const args = ['--redis', REDIS_URL, '--queue', name, '--checkpoint', checkpointDir];
  workers.push(
    ...(await Promise.all([1, 2].map(() => spawnWorker([...args, '--weights', weightsDir])))),
  );
}

/** Asynchronous GRPO (maxStaleness 1) on the queue's workers; what it trained, per step. */
async function trainAsync(options: { seed: number; maxSteps: number; maxWeightLag?: number }) {
  const inner = await createQueueSampler({
    redis: REDIS_URL,
    queue,
    weights: join(root, 'weights'),
    ...(options.maxWeightLag ? { maxWeightLag: options.maxWeightLag } : {}),
  });
  const calls: string[][] = [];
  const reported = new Set<number>();
  const sampler: Sampler = {
    specificationVersion: 'v1',
    modelId: inner.modelId,
    async sample(request, callOptions) {
      calls.push(request.prompts.map(String));
      const groups = await inner.sample(request, callOptions);
      for (const completion of groups.flat()) {
        reported.add((completion as VersionedCompletion).policyVersion);
      }
      return groups;
    },
    updateWeights: (snapshot) => inner.updateWeights!(snapshot),
  };
  const outputDir = join(root, `async-${options.seed}`);
  const model = await createLlamaModel(await loadCheckpoint(checkpointDir));
  const records: GrpoMetricRecord[] = [];
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset,
    rewards: [{ name: 'digits', fn: ({ completion }) => digits(completion) }],
    config: {
      maxSteps: options.maxSteps,
      promptsPerStep: 2,
      groupSize: 4,
      maxNewTokens: 6,
      temperature: 1,
      seed: options.seed,
      schedule: { learningRate: 0.05 },
      maxStaleness: 1,
      mismatch: { mode: 'token-truncate', cap: 2 },
      outputDir,
      quiet: true,
    },
    onStep: (record) => records.push(record),
  });
  try {
    await grpo.train();
  } finally {
    grpo.dispose();
    await inner.close();
  }
  const rows = (await readFile(join(outputDir, 'completions.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { step: number; prompt: string });
  const stepPrompts = records.map((record) => [
    ...new Set(rows.filter((row) => row.step === record.step).map((row) => row.prompt)),
  ]);
  const staleness = records.map((record) => [
    record.metrics['async/staleness_mean']!,
    record.metrics['async/staleness_max']!,
    record.metrics['async/dropped_stale_groups']!,
  ]);
  return { staleness, reported, calls, stepPrompts };
}
