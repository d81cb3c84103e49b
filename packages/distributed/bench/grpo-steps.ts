// Bench part: GRPO step time with the sampler in this process vs on 1 and 2 `rlvr-worker rollout`
// processes, synchronous (maxStaleness 0) and asynchronous (maxStaleness 1). Imported by
// distributed.bench.ts.
import { join } from 'node:path';
import type { Sampler } from '@rlvr/core';
import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { createGrpoTrainer, createLlamaModel, selectBackend } from '@rlvr/trainer';
import { createQueueSampler } from '../src/sampler/queue-sampler.js';
import {
  freshQueue,
  REDIS_URL,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../src/testing/test-env.js';

const STEPS = Number(process.env.BENCH_GRPO_STEPS ?? 4);
const TOKENS = 16;

const dataset = Array.from({ length: 32 }, (_, index) => ({
  id: `q${index}`,
  prompt: `${index % 7}+${index % 5}=`,
  answer: String((index % 7) + (index % 5)),
}));

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** Median step ms (first step excluded: warm-up) and median rollout-wait ms of a short run. */
async function stepTimes(checkpointDir: string, sampler: Sampler, maxStaleness: number) {
  const model = await createLlamaModel(await loadCheckpoint(checkpointDir));
  const steps: number[] = [];
  const rollout: number[] = [];
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset,
    rewards: [{ name: 'digits', fn: ({ completion }) => (/^[0-9]+/.test(completion) ? 1 : 0) }],
    config: {
      maxSteps: STEPS,
      promptsPerStep: 4,
      groupSize: 8,
      maxNewTokens: TOKENS,
      temperature: 1,
      seed: 1,
      quiet: true,
      ...(maxStaleness > 0
        ? { maxStaleness, mismatch: { mode: 'token-truncate' as const, cap: 2 } }
        : {}),
    },
    onStep: (record) => {
      if (record.step === 1) return;
      steps.push(record.metrics['time/step_ms']!);
      rollout.push(record.metrics['time/rollout_ms']!);
    },
  });
  try {
    await grpo.train();
  } finally {
    grpo.dispose();
  }
  return { step: median(steps), rollout: median(rollout) };
}

/**
 * On the tests' tiny model (hidden 32, 2 layers: tfjs's CPU backend trains it in about a second
 * per step here), 4 prompts × 8 samples × 16 tokens per step.
 */
export async function grpoSteps(root: string): Promise<void> {
  await selectBackend({ candidates: ['cpu'] });
  const checkpointDir = join(root, 'grpo-model');
  await saveTinyCheckpoint(checkpointDir);
  console.log(
    `\n## GRPO step time: tiny model (hidden 32, 2 layers), 4 prompts × 8 samples × ${TOKENS} tokens, median of steps 2–${STEPS} (ms)`,
  );
  console.log('| sampler | maxStaleness | step ms | waiting for rollouts ms |\n|---|---|---|---|');
  const row = (label: string, k: number, times: { step: number; rollout: number }) =>
    console.log(`| ${label} | ${k} | ${times.step.toFixed(0)} | ${times.rollout.toFixed(0)} |`);
  const checkpoint = await loadCheckpoint(checkpointDir);
  for (const k of [0, 1]) {
    const local = await createOnnxSampler({ checkpoint, workers: 0 });
    row('in-process OnnxSampler', k, await stepTimes(checkpointDir, local, k));
    await local.close();
  }
  const weights = join(root, 'weights');
  const processes: WorkerProcess[] = [];
  try {
    for (const count of [1, 2]) {
      const queue = freshQueue('bench-grpo');
      const args = ['--redis', REDIS_URL, '--queue', queue, '--checkpoint', checkpointDir];
      processes.push(
        ...(await Promise.all(
          Array.from({ length: count }, () => spawnWorker([...args, '--weights', weights])),
        )),
      );
      for (const k of [0, 1]) {
        const sampler = await createQueueSampler({
          redis: REDIS_URL,
          queue,
          weights,
          jobPer: 'group',
        });
        row(
          `queue, ${count} worker process(es), jobPer 'group'`,
          k,
          await stepTimes(checkpointDir, sampler, k),
        );
        await sampler.close();
      }
      await Promise.all(processes.splice(0).map((worker) => worker.stop()));
    }
  } finally {
    await Promise.all(processes.map((worker) => worker.stop()));
  }
}
