// The LoRA kill-and-resume run (test-only): the max-digit task on the native engine, LoRA on
// every linear layer with dropout, β > 0 (the reference is the base), the ONNX rollout engine.
// Child process use: `node --import tsx lora-run.ts <dir> <maxSteps>`.
import { createRandomCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { selectBackend } from '../backend/select-backend.js';
import { createGrpoTrainer } from '../grpo/create-grpo-trainer.js';
import type { GrpoConfig } from '../grpo/grpo-config.js';
import { createLlamaModel } from '../model/llama-model.js';
import { maxDigitTask } from './grpo-task.js';

export const LORA_RESUME_CONFIG: GrpoConfig = {
  maxSteps: 3,
  promptsPerStep: 3,
  groupSize: 4,
  maxNewTokens: 3,
  temperature: 1,
  seed: 5,
  beta: 0.04,
  numIterations: 2,
  schedule: { learningRate: 2e-2 },
  lora: { r: 4, alpha: 8, dropout: 0.1, targetModules: 'all-linear', seed: 3 },
  saveEvery: 1,
  keepLast: 2,
  quiet: true,
};

/** Runs (or resumes) the LoRA run in `outputDir`. @internal */
export async function runLoraTask(
  outputDir: string,
  options: { resume?: boolean; maxSteps?: number } = {},
) {
  const task = maxDigitTask();
  const checkpoint = {
    ...createRandomCheckpoint(task.config, { seed: 3, std: 0.1 }),
    tokenizer: task.files,
  };
  const model = await createLlamaModel(checkpoint, { engine: 'native' });
  const sampler = await createOnnxSampler({ checkpoint, workers: 1 });
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset: task.records.slice(0, 20),
    rewards: task.rewards,
    config: { ...LORA_RESUME_CONFIG, maxSteps: options.maxSteps ?? 3, outputDir },
    ...(options.resume ? { resume: true } : {}),
  });
  try {
    return await grpo.train();
  } finally {
    grpo.dispose();
    model.dispose();
    await sampler.close();
  }
}

if (process.argv[1]?.endsWith('lora-run.ts') && process.argv.length >= 4) {
  const [dir, steps] = process.argv.slice(2);
  await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
  await runLoraTask(dir!, { resume: true, maxSteps: Number(steps) });
}
