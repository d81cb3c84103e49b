import { createGrpoTrainer } from '../grpo/create-grpo-trainer.js';
import type { GrpoConfig } from '../grpo/grpo-config.js';
import { maxDigitTask } from './grpo-task.js';

/** The run the resume tests repeat (test-only): max-digit task, β > 0, μ = 2, overlong shaping. */
export const RESUME_CONFIG: GrpoConfig = {
  maxSteps: 4,
  promptsPerStep: 3,
  groupSize: 4,
  maxNewTokens: 3,
  seed: 7,
  beta: 0.04,
  epsilonHigh: 0.28,
  numIterations: 2,
  schedule: { learningRate: 3e-3, schedule: 'cosine', warmupSteps: 1, totalSteps: 8 },
  optimizer: { weightDecay: 0.01 },
  overlong: { maxLength: 3, bufferLength: 1 },
  saveEvery: 1,
  keepLast: 2,
  quiet: true,
};

/** Runs (or resumes) the test run in `outputDir`; aborts after step `abortAfter`. @internal */
export async function runResumeTask(
  outputDir: string,
  options: { resume?: boolean; abortAfter?: number; maxSteps?: number } = {},
) {
  const task = maxDigitTask();
  const model = await task.model(3);
  const sampler = await task.sampler(model);
  const controller = new AbortController();
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset: task.records.slice(0, 20),
    rewards: task.rewards,
    config: { ...RESUME_CONFIG, maxSteps: options.maxSteps ?? RESUME_CONFIG.maxSteps, outputDir },
    ...(options.resume ? { resume: true } : {}),
    onStep: (record) => {
      if (record.step === options.abortAfter) controller.abort('test');
    },
  });
  try {
    return await grpo.train({ signal: controller.signal });
  } finally {
    grpo.dispose();
    model.dispose();
    await sampler.close();
  }
}
