import { createRng } from '@rlvr/core';
import {
  type Checkpoint,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
  type TokenizerFiles,
} from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer, type TokenSequence } from '@rlvr/trainer';

/** A model size (a small Llama; the demos train it from scratch). */
export type ModelSize = {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  intermediateSize: number;
};

/** A randomly initialized checkpoint over `tokenizerFiles`, EOS as the generation stop. */
export function randomCheckpoint(
  size: ModelSize,
  tokenizerFiles: TokenizerFiles,
  seed: number,
): Checkpoint {
  const tokenizer = createTokenizer(tokenizerFiles);
  const config = parseLlamaConfig({
    model_type: 'llama',
    vocab_size: tokenizer.vocabSize,
    hidden_size: size.hiddenSize,
    num_hidden_layers: size.layers,
    num_attention_heads: size.heads,
    num_key_value_heads: size.kvHeads,
    intermediate_size: size.intermediateSize,
    tie_word_embeddings: true,
    max_position_embeddings: 512,
    rope_theta: 10000,
  });
  return {
    ...createRandomCheckpoint(config, { seed }),
    tokenizer: tokenizerFiles,
    generationConfig: { eos_token_id: tokenizer.eosTokenId },
  };
}

/**
 * Supervised warm start (`sftStep`: token-mean cross-entropy on the completion tokens, i.e. the
 * demonstrated policy tokens) over seeded shuffled mini-batches, cosine learning rate.
 */
export async function warmStart(options: {
  checkpoint: Checkpoint;
  sequences: readonly TokenSequence[];
  steps: number;
  batchSize: number;
  learningRate: number;
  seed: number;
}): Promise<{ checkpoint: Checkpoint; finalLoss: number }> {
  const model = await createLlamaModel(options.checkpoint);
  const trainer = await createPolicyTrainer(model, {
    schedule: {
      learningRate: options.learningRate,
      schedule: 'cosine',
      warmupSteps: Math.min(10, Math.floor(options.steps / 10)),
      totalSteps: Math.max(options.steps, 1),
    },
    maxGradNorm: 1,
  });
  const rng = createRng(options.seed).derive('sft');
  const order = options.sequences.map((_, index) => index);
  let cursor = order.length;
  let finalLoss = Number.NaN;
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
      finalLoss = trainer.sftStep(batch).loss;
    }
    return {
      checkpoint: { ...options.checkpoint, tensors: model.toCheckpoint().tensors },
      finalLoss,
    };
  } finally {
    trainer.dispose();
    model.dispose();
  }
}
