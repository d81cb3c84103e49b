// Bench: (1) queue overhead and scaling efficiency with fixed-latency fake workers (1–16),
// (2) sample() time of a real tiny model: in-process (batched, and per job) vs 1 and 2 worker
// processes, and (3) GRPO step time on that model: in-process vs 1 and 2 worker processes,
// synchronous vs maxStaleness 1 (bench/grpo-steps.ts). Prints the load average before and after.
// Needs a Redis: RLVR_TEST_REDIS_URL (default redis://127.0.0.1:6390).
// Run: pnpm --filter @rlvr/distributed bench
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Completion, SampleRequest, Sampler } from '@rlvr/core';
import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createQueueSampler } from '../src/sampler/queue-sampler.js';
import { createPerJobSampler } from '../src/sampler/run-job.js';
import {
  freshQueue,
  REDIS_URL,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../src/testing/test-env.js';
import { grpoSteps } from './grpo-steps.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function timeIt(fn: () => Promise<unknown>, repeats: number): Promise<number> {
  await fn(); // warm-up (sessions, child processes)
  const started = performance.now();
  for (let index = 0; index < repeats; index++) await fn();
  return (performance.now() - started) / repeats;
}

async function scaling(latencyMs: number, prompts: number, n: number): Promise<void> {
  console.log(
    `\n## Scaling: fake workers with ${latencyMs} ms per job, ${prompts}×${n} jobs per step`,
  );
  console.log('| workers | step ms | ideal ms | efficiency |\n|---|---|---|---|');
  for (const count of [1, 2, 4, 8, 16]) {
    const queue = freshQueue('bench-scale');
    const workers = Array.from(
      { length: count },
      () =>
        new Worker(
          queue,
          async (): Promise<Completion[]> => {
            await sleep(latencyMs);
            return [{ text: 'x', tokenIds: [1], logprobs: [0], finishReason: 'stop' }];
          },
          { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }) },
        ),
    );
    const sampler = await createQueueSampler({ redis: REDIS_URL, queue });
    let seed = 0;
    const request = () => ({
      prompts: Array.from({ length: prompts }, (_, i) => `p${i}`),
      n,
      maxNewTokens: 8,
      seed: seed++,
    });
    const ms = await timeIt(() => sampler.sample(request()), 3);
    const ideal = Math.ceil((prompts * n) / count) * latencyMs;
    console.log(`| ${count} | ${ms.toFixed(0)} | ${ideal} | ${((ideal / ms) * 100).toFixed(0)}% |`);
    await sampler.close();
    await Promise.all(workers.map((worker) => worker.close()));
  }
}

async function real(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'rlvr-distributed-bench-'));
  const checkpointDir = join(root, 'model');
  const weights = join(root, 'weights');
  await saveTinyCheckpoint(checkpointDir, { hidden: 128, layers: 4, positions: 128 });
  const checkpoint = await loadCheckpoint(checkpointDir);
  const request: SampleRequest = {
    prompts: ['1+2=', '3+4=', '5+6=', '7+8='],
    n: 8,
    maxNewTokens: 32,
    temperature: 1,
  };
  let seed = 0;
  const run = (sampler: Sampler) => () => sampler.sample({ ...request, seed: seed++ });
  console.log('\n## Real tiny model (hidden 128, 4 layers): 4 prompts × 8 samples × 32 tokens');
  console.log('| sampler | ms per sample() call |\n|---|---|');
  const batched = await createOnnxSampler({ checkpoint, workers: 0 });
  console.log(
    `| in-process OnnxSampler (batched) | ${(await timeIt(run(batched), 3)).toFixed(0)} |`,
  );
  const perJob = createPerJobSampler(batched);
  console.log(
    `| in-process, one call per job (what a worker does) | ${(await timeIt(run(perJob), 3)).toFixed(0)} |`,
  );
  const perGroup = createPerJobSampler(batched, { jobPer: 'group' });
  console.log(
    `| in-process, one call per group | ${(await timeIt(run(perGroup), 3)).toFixed(0)} |`,
  );
  await batched.close();
  const processes: WorkerProcess[] = [];
  try {
    for (const count of [1, 2]) {
      const queue = freshQueue('bench-real');
      const args = [
        '--redis',
        REDIS_URL,
        '--queue',
        queue,
        '--checkpoint',
        checkpointDir,
        '--weights',
        weights,
      ];
      processes.push(
        ...(await Promise.all(Array.from({ length: count }, () => spawnWorker(args)))),
      );
      for (const jobPer of ['sample', 'group'] as const) {
        const sampler = await createQueueSampler({ redis: REDIS_URL, queue, weights, jobPer });
        const ms = await timeIt(run(sampler), 3);
        console.log(
          `| queue, ${count} worker process(es), jobPer '${jobPer}' | ${ms.toFixed(0)} |`,
        );
        await sampler.close();
      }
      await Promise.all(processes.splice(0).map((worker) => worker.stop()));
    }
    await grpoSteps(root);
  } finally {
    await Promise.all(processes.map((worker) => worker.stop()));
    await rm(root, { recursive: true, force: true });
  }
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
console.log(`load average (1/5/15 min) at start: ${load()}`);
await scaling(50, 8, 8);
await real();
console.log(`\nload average (1/5/15 min) at end: ${load()}`);
process.exit(0);
