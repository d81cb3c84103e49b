import { createQueueReward, createQueueSampler } from '@rlvr/distributed';
import { loadCheckpoint } from '@rlvr/model';
import { createGrpoTrainer, createLlamaModel, selectBackend } from '@rlvr/trainer';

/** GRPO whose rollouts and reward checks run on `rlvr-worker` processes that reach `redis`. */
export async function trainOnWorkers({
  redis = 'redis://:PASSWORD@10.0.0.5:6379', // the Redis the workers listen on
  weights = '/shared/weights', // the folder the rollout workers read (--weights)
  checkpointDir = '/models/tiny-math', // the rollout workers' --checkpoint
  dataset = 'data/math.jsonl', // one {"id","prompt","answer"} per line
  outputDir = 'runs/math', // metrics.jsonl, completions.jsonl, checkpoints/
  maxSteps = 200,
  maxNewTokens = 256,
  maxStaleness = 1, // asynchronous: the next step samples while this one trains (0: synchronous)
} = {}) {
  await selectBackend();
  const model = await createLlamaModel(await loadCheckpoint(checkpointDir));
  const sampler = await createQueueSampler({
    redis,
    weights, // after each update the weights go here; jobs name their version
    jobPer: 'group', // one job samples a prompt's whole group (batched on one worker)
    failedJobs: 'abort-group', // a prompt whose job keeps failing is skipped, not the run
    onJobFailed: (error) => console.warn(error.message),
  });
  const exact = await createQueueReward({ redis, reward: 'exact' }); // from rewards.mjs
  try {
    const grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset,
      rewards: [{ name: 'exact', fn: exact }],
      config: {
        maxSteps,
        promptsPerStep: 8,
        groupSize: 8,
        maxNewTokens,
        seed: 1,
        outputDir,
        maxStaleness,
        mismatch: { mode: 'token-truncate', cap: 2 }, // corrects groups sampled by older weights
      },
      resume: true, // run it again after a crash or a Redis outage: it continues
    });
    try {
      return await grpo.train();
    } finally {
      grpo.dispose();
    }
  } finally {
    await Promise.all([sampler.close(), exact.close()]);
  }
}
