import type { EnvironmentFactory, Trajectory } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';

// An environment per trajectory: the tool's result goes back to the model, done after 3 turns.
const environment: EnvironmentFactory = ({ prompt }) => ({
  reset: () => ({
    messages: [{ role: 'user', content: prompt }],
    tools: [
      {
        name: 'calculator',
        description: 'Evaluates an arithmetic expression.',
        inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
      },
    ],
  }),
  step: (turn) =>
    turn.index >= 2 || turn.finishReason === 'stop'
      ? { messages: [], done: true, reward: turn.text.includes('408') ? 1 : 0 }
      : { messages: [{ role: 'tool', content: '408' }], done: false },
});

/** G = 4 trajectories of a checkpoint whose tokenizer has a chat template (Qwen / Hermes tools). */
export async function rollOut(checkpoint: Checkpoint): Promise<Trajectory[]> {
  const sampler = await createOnnxSampler({ checkpoint, workers: 1 });
  try {
    const [group] = await sampler.sampleTrajectories({
      prompts: [{ prompt: 'What is 12 * 34?' }],
      n: 4,
      environment,
      maxTurns: 3,
      maxNewTokens: 32,
      maxTotalTokens: 256,
      temperature: 0.8,
      seed: 1,
    });
    return group!; // each: tokenIds, policyMask (1 = policy, 0 = tool result), logprobs, turns
  } finally {
    await sampler.close();
  }
}
