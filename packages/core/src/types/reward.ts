import type { FinishReason } from './sampler.js';
import type { Trajectory } from './trajectory.js';
/** What a reward function sees about one sample. */
export type RewardInput = {
  /** The prompt as text. */
  prompt: string;
  /** The completion text. */
  completion: string;
  /** The reference answer or test data from the dataset record, if any. */
  answer?: unknown;
  /** Id of the prompt (dataset record). */
  promptId?: string;
  /** Why generation ended; lets a reward treat truncated outputs differently. */
  finishReason?: FinishReason;
  /** Number of completion tokens. */
  completionTokens?: number;
  /** Any other fields of the dataset record. */
  metadata?: Readonly<Record<string, unknown>>;
  /**
   * Multi-turn runs: the whole trajectory (turns, transcript, the environment's reward), the
   * final state a reward function scores; `completion` is then the last assistant turn's text.
   */
  trajectory?: Trajectory;
};

/**
 * Scores one sample. Return `null` when the reward does not apply to this sample (for example a
 * code reward on a math prompt): `null` rewards are excluded from group baselines and get advantage 0.
 */
export type RewardFunction = (input: RewardInput) => number | null | Promise<number | null>;

/** A reward function with a name (for metrics) and a weight (for combining several). */
export type WeightedReward = { name: string; fn: RewardFunction; weight?: number };
