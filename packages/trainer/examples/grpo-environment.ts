import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { createCalculatorTool, createToolEnvironment } from '@rlvr/tools';
import { createGrpoTrainer, createLlamaModel, selectBackend } from '@rlvr/trainer';

/** Multi-turn GRPO with a calculator tool: reward 1 when the final answer is right. */
export async function trainWithCalculator(
  checkpoint: Checkpoint, // its tokenizer has a chat template with tools (Qwen / Hermes format)
  dataset: { id: string; prompt: string; answer: string }[],
  maxSteps = 100,
) {
  const environment = createToolEnvironment({
    setup: ({ answer }) => ({
      tools: [createCalculatorTool()],
      reward: ({ turns }) => (turns.at(-1)?.text.includes(String(answer)) ? 1 : 0),
    }),
  });
  await selectBackend();
  const model = await createLlamaModel(checkpoint);
  const sampler = await createOnnxSampler({ checkpoint, workers: 1 });
  try {
    const grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset,
      environment, // the environment's reward is the reward column `environment`
      config: {
        maxSteps,
        promptsPerStep: 4,
        groupSize: 8,
        maxNewTokens: 48, // per turn
        maxTurns: 3,
        maxTotalTokens: 256, // policy + tool-result tokens
        temperature: 1,
        schedule: { learningRate: 1e-3 },
        quiet: true,
      },
    });
    const result = await grpo.train(); // metrics: turns/*, tools/status/*, tools/call_success_rate
    grpo.dispose();
    return result;
  } finally {
    await sampler.close();
    model.dispose();
  }
}
