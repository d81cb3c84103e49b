import type { FinishReason } from './sampler.js';
/**
 * One row of training metrics, as TRL/verl log them (flat names, e.g. `reward/mean`,
 * `reward/correctness/std`, `frac_reward_zero_std`, `kl`, `entropy`, `clip_ratio/low_mean`,
 * `completions/mean_length`, `mismatch/is_ratio_max`).
 */
export type MetricRecord = {
  /** Optimizer step. */
  step: number;
  /** Wall-clock time in ms since the run started. */
  elapsedMs?: number;
  /** Phase name, e.g. `train`, `eval`, `sft`. */
  phase?: string;
  metrics: Record<string, number>;
};

/** One row of the completions table (JSONL), for inspecting what the policy writes. */
export type CompletionRecord = {
  step: number;
  promptId: string;
  prompt: string;
  completion: string;
  reward: number | null;
  rewards: Record<string, number | null>;
  advantage: number;
  finishReason: FinishReason;
  completionTokens: number;
};
