import type { FinishReason } from '@rlvr/core';
import type { TopKLogprobs } from '../losses/divergences.js';

/** One teacher trace: a line of the traces JSONL file. Plain, JSON-serializable. */
export type TraceRecord = {
  promptId: string;
  prompt: string;
  /** Index of this sample among the k drawn for the prompt. */
  sampleIndex: number;
  /** Prompt token ids as the teacher saw them (when the sampler reports them). */
  promptTokenIds?: number[];
  completion: string;
  /** Completion token ids (teacher tokenizer; the student must share it). */
  tokenIds: number[];
  /** Teacher behaviour logprobs per completion token, when requested. */
  logprobs?: number[];
  /** Teacher top-k logprobs per completion token, when the sampler provides them. */
  topLogprobs?: TopKLogprobs[];
  finishReason: FinishReason;
  /** The verifier's reward (`null`: not applicable). */
  reward: number | null;
  /** Whether the verifier accepted the trace (reward ≥ acceptThreshold). */
  accepted: boolean;
  /** Reference answer from the prompt record, if any. */
  answer?: unknown;
  metadata?: Record<string, unknown>;
};

/** One prompt to distil from: the dataset record. */
export type PromptRecord = {
  id: string;
  prompt: string;
  answer?: unknown;
  metadata?: Record<string, unknown>;
};
