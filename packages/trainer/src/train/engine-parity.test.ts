import type { Completion } from '@rlvr/core';
import { buildCharTokenizer } from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { createLlamaModel } from '../model/llama-model.js';
import { TINY_CONFIGS, tinyCheckpoint } from '../testing/fixtures.js';
import { createPolicyTrainer, type PolicyTrainer } from './policy-trainer.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ENGINES = ['loop', 'optimum'] as const;
const PROMPTS = [
  [5, 6, 7, 8],
  [9, 10],
];

/** Samples 2 prompts × 4 completions × 10 tokens (no EOS: 80 positions) at `temperature`. */
async function sampleGroups(sampler: OnnxSampler, temperature: number): Promise<Completion[][]> {
  return sampler.sample({
    prompts: PROMPTS,
    n: 4,
    maxNewTokens: 10,
    temperature,
    returnModelLogprobs: true,
    seed: 7,
  });
}

/**
 * Max |trainer − sampler| over every sampled token: the trainer's logprobs at `temperature`
 * against the behaviour logprobs (no filtering: log softmax(logits / T)), and at temperature 1
 * against the model logprobs.
 */
function maxDifference(trainer: PolicyTrainer, groups: Completion[][], temperature: number) {
  const sequences = groups.flatMap((group, index) =>
    group.map((completion) => ({ promptIds: PROMPTS[index]!, completionIds: completion.tokenIds })),
  );
  const atTemperature = trainer.completionLogprobs(sequences, { temperature }).logprobs;
  const atOne = trainer.completionLogprobs(sequences, { temperature: 1 }).logprobs;
  let positions = 0;
  let max = 0;
  groups.flat().forEach((completion, index) => {
    expect(atTemperature[index]).toHaveLength(completion.tokenIds.length);
    completion.tokenIds.forEach((_, t) => {
      positions++;
      max = Math.max(
        max,
        Math.abs(atTemperature[index]![t]! - completion.logprobs[t]!),
        Math.abs(atOne[index]![t]! - completion.modelLogprobs![t]!),
      );
    });
  });
  return { max, positions, first: atOne };
}

/**
 * The cross-engine parity contract: the logprobs either ONNX rollout engine reports for the tokens
 * it sampled equal the logprobs the tfjs trainer computes for the same tokens (within 1e-4), for
 * random weights and for weights after a few training steps (synced to the samplers the way
 * GrpoTrainer does it, with `updateWeights`), at temperature 1 and at the sampling temperature.
 */
describe('engine parity: @rlvr/rollout (both ONNX engines) vs @rlvr/trainer (tfjs)', () => {
  // wasm twice: matrix products on onnxruntime-node's MLAS (the default here) and on XNNPACK.
  const variants = [
    ['cpu', 'backend'],
    ['wasm', 'onnxruntime'],
    ['wasm', 'backend'],
  ] as const;
  for (const [backend, matMul] of variants) {
    for (const name of Object.keys(TINY_CONFIGS)) {
      it(`should give the same per-token logprobs on ${backend} (matMul ${matMul}, ${name}), random and trained weights`, async () => {
        expect((await selectBackend({ candidates: [backend], matMul })).matMul).toBe(matMul);
        const checkpoint = tinyCheckpoint(name, 5);
        const vocab = checkpoint.config.vocab_size;
        const tokenizer = buildCharTokenizer({ characters: ALPHABET.slice(0, vocab - 4) });
        const samplers = await Promise.all(
          ENGINES.map((engine) =>
            createOnnxSampler({
              checkpoint: { ...checkpoint, tokenizer },
              engine,
              workers: 0,
              threads: 1,
              eosTokenIds: [], // every completion runs to maxNewTokens
            }),
          ),
        );
        const model = await createLlamaModel(checkpoint);
        const trainer = await createPolicyTrainer(model, {
          schedule: { learningRate: 0.02 },
          maxGradNorm: 0,
        });
        try {
          let before: number[][] | undefined;
          for (const [engineIndex, sampler] of samplers.entries()) {
            expect(sampler.engine).toBe(ENGINES[engineIndex]);
            const random = maxDifference(trainer, await sampleGroups(sampler, 1), 1);
            expect(random.positions).toBeGreaterThanOrEqual(64);
            expect(random.max).toBeLessThan(1e-4);
          }
          // "Training": a few deterministic SFT steps on fixed sequences, then a weight sync.
          const groups = await sampleGroups(samplers[0]!, 1);
          before = maxDifference(trainer, groups, 1).first;
          const data = [
            { promptIds: [5, 6], completionIds: [7, 8, 9, 10] },
            { promptIds: [9], completionIds: [11, 12, 13] },
          ];
          for (let step = 0; step < 3; step++) trainer.sftStep(data);
          const snapshot = model.toWeightSnapshot(3);
          const moved = maxDifference(trainer, groups, 1).first;
          const change = Math.max(
            ...moved.flatMap((row, i) => row.map((value, t) => Math.abs(value - before![i]![t]!))),
          );
          expect(change).toBeGreaterThan(0.05); // the weights really changed
          for (const sampler of samplers) {
            await sampler.updateWeights(snapshot);
            for (const temperature of [1, 0.7]) {
              const trained = maxDifference(
                trainer,
                await sampleGroups(sampler, temperature),
                temperature,
              );
              expect(trained.positions).toBeGreaterThanOrEqual(64);
              expect(trained.max).toBeLessThan(1e-4);
            }
          }
        } finally {
          await Promise.all(samplers.map((sampler) => sampler.close()));
          trainer.dispose();
          model.dispose();
        }
      }, 120_000);
    }
  }
});
