import { buildCharTokenizer } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { createLlamaModel } from '../model/llama-model.js';
import { TINY_CONFIGS, tinyCheckpoint } from '../testing/fixtures.js';
import { createPolicyTrainer } from './policy-trainer.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The cross-engine parity contract: the logprobs the ONNX rollout engine reports for the tokens it
 * sampled equal the logprobs the tfjs trainer computes for the same tokens (within 1e-4).
 */
describe('engine parity: @rlvr/rollout (ONNX Runtime) vs @rlvr/trainer (tfjs)', () => {
  for (const backend of ['cpu', 'wasm'] as const) {
    for (const name of Object.keys(TINY_CONFIGS)) {
      it(`should give the same per-token logprobs on ${backend} (${name})`, async () => {
        await selectBackend({ candidates: [backend] });
        const checkpoint = tinyCheckpoint(name, 5);
        const vocab = checkpoint.config.vocab_size;
        const tokenizer = buildCharTokenizer({ characters: ALPHABET.slice(0, vocab - 4) });
        const sampler = await createOnnxSampler({
          checkpoint: { ...checkpoint, tokenizer },
          workers: 0,
          threads: 1,
        });
        const prompts = [
          [5, 6, 7, 8],
          [9, 10],
        ];
        const groups = await sampler.sample({
          prompts,
          n: 3,
          maxNewTokens: 10,
          temperature: 1,
          returnModelLogprobs: true,
          seed: 7,
        });
        await sampler.close();
        const model = await createLlamaModel(checkpoint);
        const trainer = await createPolicyTrainer(model, {});
        const sequences = groups.flatMap((group, index) =>
          group.map((completion) => ({
            promptIds: prompts[index]!,
            completionIds: completion.tokenIds,
          })),
        );
        const { logprobs } = trainer.completionLogprobs(sequences);
        const completions = groups.flat();
        let maxDiff = 0;
        completions.forEach((completion, index) => {
          expect(logprobs[index]).toHaveLength(completion.tokenIds.length);
          completion.tokenIds.forEach((_, t) => {
            maxDiff = Math.max(
              maxDiff,
              Math.abs(logprobs[index]![t]! - completion.modelLogprobs![t]!),
              // temperature 1 without filtering: the behaviour logprob is the model logprob
              Math.abs(logprobs[index]![t]! - completion.logprobs[t]!),
            );
          });
        });
        expect(completions.reduce((sum, c) => sum + c.tokenIds.length, 0)).toBeGreaterThan(20);
        expect(maxDiff).toBeLessThan(1e-4);
        trainer.dispose();
        model.dispose();
      }, 120_000);
    }
  }
});
