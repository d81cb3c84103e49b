import type { Completion, Sampler, WeightedReward } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import type { GrpoTrainerOptions } from '../grpo/create-grpo-trainer.js';
import { createGrpoTrainer } from '../grpo/create-grpo-trainer.js';
import type { GrpoConfig } from '../grpo/grpo-config.js';
import type { LlamaModel } from '../model/llama-model.js';
import { maxDigitTask } from './grpo-task.js';

/** Three max-digit prompts (test-only). */
export const ANSWER_RECORDS = [
  { id: 'a', prompt: '123>', answer: '3' },
  { id: 'b', prompt: '456>', answer: '6' },
  { id: 'c', prompt: '789>', answer: '9' },
];

/** A scripted completion over the max-digit vocabulary ('0' = id 4). */
export function scripted(
  text: string,
  options: { finishReason?: Completion['finishReason'] } = {},
): Completion {
  const tokenIds = [...text].map((c) => 4 + Number(c));
  return {
    text,
    tokenIds,
    logprobs: tokenIds.map(() => -1),
    promptTokenIds: [4, 5, 6, 14],
    finishReason: options.finishReason ?? 'stop',
  };
}

/** A MockSampler that answers every prompt with the same scripted texts (one per sample). */
export function constantSampler(texts: readonly string[]): MockSampler {
  return new MockSampler({
    script: (request) => request.prompts.map(() => texts.map((text) => scripted(text))),
  });
}

/** The `correct` reward of the max-digit task. */
export const CORRECT: WeightedReward = {
  name: 'correct',
  fn: ({ completion, answer }) => (completion === answer ? 1 : 0),
};

/** The small scripted-run config the orchestration tests start from. */
export const SCRIPTED_CONFIG: GrpoConfig = {
  maxSteps: 2,
  promptsPerStep: 2,
  groupSize: 2,
  maxNewTokens: 4,
  shuffle: false,
  schedule: { learningRate: 1e-3 },
};

/**
 * A GrpoTrainer on the tiny max-digit model with {@link ANSWER_RECORDS}, the `correct` reward and
 * {@link SCRIPTED_CONFIG} (overridden by `config`); logs collected in `logs`. @internal
 */
export async function makeScripted(
  sampler: Sampler,
  config: Partial<GrpoConfig> = {},
  extra: Partial<Omit<GrpoTrainerOptions, 'config' | 'sampler'>> = {},
) {
  const task = maxDigitTask();
  const model: LlamaModel = extra.model ?? (await task.model(5));
  const logs: string[] = [];
  try {
    const grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset: ANSWER_RECORDS,
      rewards: [CORRECT],
      onLog: (message) => logs.push(message),
      ...extra,
      config: { ...SCRIPTED_CONFIG, ...config } as GrpoConfig,
    });
    return {
      grpo,
      model,
      logs,
      dispose() {
        grpo.dispose();
        model.dispose();
      },
    };
  } catch (error) {
    model.dispose();
    throw error;
  }
}
