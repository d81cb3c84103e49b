import type { EnvironmentFactory, Trajectory, TrajectoryPrompt } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';

/** Multi-turn rollouts of `prompts` against `environment`: greedy (one each), or sampled. */
export async function rollOutGreedy(options: {
  checkpoint: Checkpoint;
  prompts: readonly TrajectoryPrompt[];
  environment: EnvironmentFactory;
  maxTurns: number;
  maxNewTokens: number;
  maxTotalTokens: number;
  /** Sampled rollouts (n per prompt at this temperature) instead of greedy ones. */
  sampled?: { temperature: number; n: number; seed: number };
}): Promise<Trajectory[]> {
  const sampler = await createOnnxSampler({
    checkpoint: options.checkpoint,
    workers: 1,
    threads: 1,
  });
  try {
    const groups = await sampler.sampleTrajectories({
      prompts: options.prompts,
      n: options.sampled?.n ?? 1,
      environment: options.environment,
      maxTurns: options.maxTurns,
      maxNewTokens: options.maxNewTokens,
      maxTotalTokens: options.maxTotalTokens,
      temperature: options.sampled?.temperature ?? 0,
      seed: options.sampled?.seed ?? 0,
    });
    return groups.flat();
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
