import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashFloat32, type RewardFunction, type Sampler } from '@rlvr/core';
import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import {
  createGrpoTrainer,
  createLlamaModel,
  type GrpoMetricRecord,
  selectBackend,
} from '@rlvr/trainer';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueUnavailableError } from '../errors/queue-unavailable-error.js';
import { createQueueReward } from '../reward/queue-reward.js';
import { createQueueSampler, type QueueSampler } from '../sampler/queue-sampler.js';
import { createPerJobSampler } from '../sampler/run-job.js';
import {
  freshQueue,
  HAS_REDIS_SERVER,
  type RedisServer,
  redisServer,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../testing/test-env.js';

// The reward, scored in this process for the local run and by `rlvr-worker verify` otherwise.
const DIGITS_SOURCE = `(completion) => completion.length === 0 ? 0 : (completion.match(/[0-9]/g)?.length ?? 0) / completion.length`;
const digits = new Function(`return ${DIGITS_SOURCE}`)() as (completion: string) => number;

let root: string;
let checkpointDir: string;
let redis: RedisServer;
const rolloutQueue = freshQueue('restart-rollout');
const verifyQueue = freshQueue('restart-verify');
const workers: WorkerProcess[] = [];
let expected: { metrics: Record<string, number>[]; weights: string };

const dataset = Array.from({ length: 8 }, (_, index) => ({
  id: `q${index}`,
  prompt: `${index % 5}+${index % 3}=`,
  answer: String((index % 5) + (index % 3)),
}));

const STEPS = 3;

/** Trains with `sampler` and `reward` up to step 3 (or resumes); metrics without times, weight hash. */
async function train(
  sampler: Sampler,
  reward: RewardFunction,
  options: { outputDir?: string; resume?: boolean } = {},
) {
  const model = await createLlamaModel(await loadCheckpoint(checkpointDir));
  const records: GrpoMetricRecord[] = [];
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset,
    rewards: [{ name: 'digits', fn: reward }],
    config: {
      maxSteps: STEPS,
      promptsPerStep: 2,
      groupSize: 4,
      maxNewTokens: 6,
      temperature: 1,
      seed: 5,
      schedule: { learningRate: 0.05 },
      quiet: true,
      ...(options.outputDir ? { outputDir: options.outputDir, saveEvery: 1 } : {}),
    },
    ...(options.resume ? { resume: true } : {}),
    onStep: (record) => records.push(record),
  });
  const result = (error?: unknown) => ({
    error,
    metrics: records.map((record) =>
      Object.fromEntries(
        Object.entries(record.metrics).filter(
          ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
        ),
      ),
    ),
    weights: hashFloat32(model.toWeightSnapshot(0).tensors.map((tensor) => tensor.data)),
  });
  try {
    await grpo.train();
    return result();
  } catch (error) {
    return result(error);
  } finally {
    grpo.dispose();
  }
}

/**
 * The queue sampler, with Redis killed during its `call`-th `sample()` once a job of that call
 * has completed (so some results are in and some are not), then `after()`.
 */
function crashRedisDuring(inner: QueueSampler, call: number, after: () => Promise<void>) {
  let calls = 0;
  let crashed = false;
  const completedJobs = async () => {
    const probe = new Redis(redis.port, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      return await probe.zcard(`bull:${rolloutQueue}:completed`);
    } finally {
      probe.disconnect();
    }
  };
  const sampler: Sampler = {
    specificationVersion: 'v1',
    modelId: inner.modelId,
    async sample(request, options) {
      calls += 1;
      if (calls !== call) return inner.sample(request, options);
      const before = await completedJobs();
      let settled = false;
      const pending = inner.sample(request, options).finally(() => {
        settled = true;
      });
      pending.catch(() => undefined);
      while (!settled && (await completedJobs()) === before) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(settled).toBe(false); // the crash hits a call with jobs pending
      await redis.kill();
      crashed = true;
      await after();
      return pending;
    },
    updateWeights: (snapshot) => inner.updateWeights!(snapshot),
  };
  return { sampler, crashed: () => crashed };
}

async function queueClients(reconnectTimeoutMs?: number) {
  const timeout = reconnectTimeoutMs === undefined ? {} : { reconnectTimeoutMs };
  const sampler = await createQueueSampler({
    redis: redis.url,
    queue: rolloutQueue,
    weights: join(root, 'weights'),
    ...timeout,
  });
  const reward = await createQueueReward({
    redis: redis.url,
    queue: verifyQueue,
    reward: 'digits',
    ...timeout,
  });
  return {
    sampler,
    reward: (input: Parameters<RewardFunction>[0]) => reward(input),
    close: () => Promise.all([sampler.close(), reward.close()]),
  };
}

async function steps(outputDir: string) {
  const text = await readFile(join(outputDir, 'metrics.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { step: number }).step);
}

beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-redis-restart-'));
  checkpointDir = join(root, 'model');
  await saveTinyCheckpoint(checkpointDir);
  const rewardsFile = join(root, 'rewards.mjs');
  await writeFile(
    rewardsFile,
    `export default { digits: ({ completion }) => (${DIGITS_SOURCE})(completion) };\n`,
  );
  redis = await redisServer();
  await redis.start();
  const common = ['--redis', redis.url, '--stalled-interval', '1000', '--lock-duration', '2000'];
  const rollout = [...common, '--queue', rolloutQueue, '--checkpoint', checkpointDir];
  const spawned = Promise.all([
    spawnWorker([...rollout, '--weights', join(root, 'weights')]),
    spawnWorker([...rollout, '--weights', join(root, 'weights')]),
    spawnWorker([...common, '--queue', verifyQueue, '--rewards', rewardsFile], 'verify'),
  ]);
  // meanwhile, the undisturbed run in one process
  const checkpoint = await loadCheckpoint(checkpointDir);
  const local = createPerJobSampler(await createOnnxSampler({ checkpoint, workers: 0 }));
  expected = await train(local, ({ completion }) => digits(completion)).finally(() =>
    local.close!(),
  );
  workers.push(...(await spawned));
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await redis?.kill();
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!HAS_REDIS_SERVER)('a GRPO run on queue workers through a Redis restart', () => {
  it('continues when Redis comes back: same metrics and weights as an undisturbed run', async () => {
    expect(expected.metrics).toHaveLength(STEPS);
    const outputDir = join(root, 'continued');
    const clients = await queueClients();
    // crash during step 2's sampling; Redis restarts (empty: no persistence) 300 ms later
    const crash = crashRedisDuring(clients.sampler, 2, async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await redis.start();
    });
    const run = await train(crash.sampler, clients.reward, { outputDir }).finally(() =>
      clients.close(),
    );
    expect(run.error).toBeUndefined();
    expect(crash.crashed()).toBe(true);
    expect(run.metrics).toEqual(expected.metrics);
    expect(run.weights).toBe(expected.weights);
    expect(await steps(outputDir)).toEqual([1, 2, 3]);
  });

  it('stops with QueueUnavailableError when Redis stays away; the run folder resumes to the same result', async () => {
    const outputDir = join(root, 'stopped');
    // forget the first test's jobs: this run's would find them done
    const probe = new Redis(redis.port);
    await probe.flushall();
    probe.disconnect();
    const clients = await queueClients(1_000);
    const crash = crashRedisDuring(clients.sampler, 2, async () => undefined);
    const first = await train(crash.sampler, clients.reward, { outputDir }).finally(() =>
      clients.close(),
    );
    expect(QueueUnavailableError.isInstance(first.error)).toBe(true);
    expect((first.error as Error).message).toMatch(/did not come back within 1000 ms/);
    // nothing of step 2 was written: step 1's line, rows and checkpoint
    expect(await steps(outputDir)).toEqual([1]);
    const rows = (await readFile(join(outputDir, 'completions.jsonl'), 'utf8')).trim().split('\n');
    expect(rows.every((row) => (JSON.parse(row) as { step: number }).step === 1)).toBe(true);
    expect(await readdir(join(outputDir, 'checkpoints'))).toEqual(['step-00000001']);

    await redis.start();
    const again = await queueClients();
    const second = await train(again.sampler, again.reward, { outputDir, resume: true }).finally(
      () => again.close(),
    );
    expect(second.error).toBeUndefined();
    expect([...first.metrics, ...second.metrics]).toEqual(expected.metrics);
    expect(second.weights).toBe(expected.weights);
    expect(await steps(outputDir)).toEqual([1, 2, 3]);
  });
});
