import type { FinishReason } from './sampler.js';

/** One sampled and scored completion: the unit of RL data. Plain, JSON-serializable. */
export type Rollout = {
  promptId: string;
  prompt: string;
  completion: string;
  /** Prompt token ids (as the sampler saw them). */
  promptTokenIds: number[];
  /** Completion token ids. */
  tokenIds: number[];
  /** Behaviour logprobs from the sampler, one per completion token. */
  logprobs: number[];
  /** Combined scalar reward (`null`: no reward applied). */
  reward: number | null;
  /** Each reward function's raw value, by name. */
  rewards: Record<string, number | null>;
  finishReason: FinishReason;
  /** Model that produced it (`Sampler.modelId`). */
  modelId: string;
  /** Policy version (optimizer step) of the weights that sampled it. */
  policyVersion?: number;
};

/** The G rollouts of one prompt: the unit GRPO normalizes over. */
export type RolloutGroup = {
  promptId: string;
  prompt: string;
  /** Reference answer from the dataset record, if any. */
  answer?: unknown;
  rollouts: Rollout[];
};
