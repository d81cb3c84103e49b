import type { EnvironmentFactory, Trajectory, TrajectoryPrompt } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';

/** Greedy multi-turn rollouts of `prompts` (one each) against `environment`. */
export async function rollOutGreedy(options: {
  checkpoint: Checkpoint;
  prompts: readonly TrajectoryPrompt[];
  environment: EnvironmentFactory;
  maxTurns: number;
  maxNewTokens: number;
  maxTotalTokens: number;
}): Promise<Trajectory[]> {
  const sampler = await createOnnxSampler({
    checkpoint: options.checkpoint,
    workers: 1,
    threads: 1,
  });
  try {
    const groups = await sampler.sampleTrajectories({
      prompts: options.prompts,
      n: 1,
      environment: options.environment,
      maxTurns: options.maxTurns,
      maxNewTokens: options.maxNewTokens,
      maxTotalTokens: options.maxTotalTokens,
      temperature: 0,
      seed: 0,
    });
    return groups.map((group) => group[0]!);
  } finally {
    await sampler.close();
  }
}

/** A trajectory as readable text: the transcript, one message per block. */
export function transcript(trajectory: Trajectory): string {
  return trajectory.messages.map((message) => `[${message.role}] ${message.content}`).join('\n');
}

/** True when any turn of the trajectory made a (well-formed) tool call. */
export function calledTool(trajectory: Trajectory): boolean {
  return trajectory.turns.some((turn) => turn.toolCalls > 0);
}
