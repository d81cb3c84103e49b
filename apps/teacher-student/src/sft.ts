import { createRng } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer, type TokenSequence } from '@rlvr/trainer';
import type { PhaseProgress } from './progress.js';

/** Result of {@link runSft}. */
export type SftResult = {
  checkpoint: Checkpoint;
  /** Loss per step. */
  losses: number[];
  tokens: number;
  timeMs: number;
};

/**
 * Supervised fine-tuning with @rlvr/trainer's `sftStep` (token-mean cross-entropy on completion
 * tokens): `steps` steps over seeded shuffled mini-batches of `sequences`, cosine learning rate.
 */
export async function runSft(options: {
  checkpoint: Checkpoint;
  sequences: readonly TokenSequence[];
  steps: number;
  batchSize: number;
  learningRate: number;
  seed: number;
  progress?: PhaseProgress;
}): Promise<SftResult> {
  const started = performance.now();
  const model = await createLlamaModel(options.checkpoint);
  const trainer = await createPolicyTrainer(model, {
    schedule: {
      learningRate: options.learningRate,
      schedule: 'cosine',
      warmupSteps: Math.min(10, Math.floor(options.steps / 10)),
      totalSteps: Math.max(options.steps, 1),
    },
    maxGradNorm: 1,
    microBatchSize: 64,
  });
  const rng = createRng(options.seed).derive('sft');
  const order = options.sequences.map((_, index) => index);
  let cursor = order.length;
  const losses: number[] = [];
  let tokens = 0;
  try {
    for (let step = 0; step < options.steps; step++) {
      const batch: TokenSequence[] = [];
      while (batch.length < Math.min(options.batchSize, order.length)) {
        if (cursor >= order.length) {
          rng.shuffle(order);
          cursor = 0;
        }
        batch.push(options.sequences[order[cursor++]!]!);
      }
      const result = trainer.sftStep(batch);
      losses.push(result.loss);
      tokens += result.tokens;
      options.progress?.update(step + 1, `loss ${result.loss.toFixed(3)}`);
    }
    return {
      checkpoint: { ...options.checkpoint, tensors: model.toCheckpoint().tensors },
      losses,
      tokens,
      timeMs: performance.now() - started,
    };
  } finally {
    options.progress?.stop();
    trainer.dispose();
    model.dispose();
  }
}
