import { loadCheckpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { createGrpoTrainer, createLlamaModel, selectBackend } from '@rlvr/trainer';
import { mathReward } from '@rlvr/verifiers';

/** GRPO on a math dataset: ONNX rollouts, a math verifier as the reward, tfjs training. */
export async function trainMath({
  checkpointDir = 'models/tiny-math', // an @rlvr/model checkpoint folder, tokenizer included
  dataset = 'data/math.jsonl', // one {"id","prompt","answer"} per line
  outputDir = 'runs/math', // metrics.jsonl, completions.jsonl, checkpoints/
  maxSteps = 200,
  maxNewTokens = 256,
} = {}) {
  await selectBackend(); // tfjs-node-gpu → tfjs-node → wasm → cpu, the first that loads
  const checkpoint = await loadCheckpoint(checkpointDir);
  const model = await createLlamaModel(checkpoint);
  const sampler = await createOnnxSampler({ checkpoint, workers: 2 });
  try {
    const grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset,
      rewards: [{ name: 'math', fn: mathReward() }],
      config: {
        maxSteps,
        promptsPerStep: 8,
        groupSize: 8,
        maxNewTokens,
        temperature: 0.9, // the trainer's logprobs use it too: on-policy
        epsilonHigh: 0.28,
        dynamicSampling: true,
        schedule: { learningRate: 1e-5 },
        outputDir,
      },
      resume: true, // continue from outputDir/checkpoints when there is one
    });
    const result = await grpo.train();
    grpo.dispose();
    return result;
  } finally {
    await sampler.close();
    model.dispose();
  }
}
