import type { Completion, SampleRequest } from '@rlvr/core';
import {
  buildFamilyTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  createTokenizer,
  parseModelConfig,
} from '@rlvr/model';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FAMILY_CONFIGS,
  referenceLogits,
  tinyFamilyCheckpoint,
} from './__fixtures__/tiny-model.js';
import { createOnnxSampler } from './onnx-sampler.js';

// Both engines on each family's tiny model: they sample the same tokens (same seed), their
// behaviour logprobs are the float64 reference's (temperature 1, no filter) at every sampled token,
// 14 tokens after prompts of different lengths (left padding) cross Gemma's window of 3 and the
// loop engine's runs of 4 tokens (its cache carried between runs), and a weight update reaches the
// sessions (the new reference holds).
const TIMEOUT = 60_000;
const request: SampleRequest = {
  prompts: [
    [1, 4, 5, 6, 7],
    [1, 8],
  ],
  n: 2,
  maxNewTokens: 14,
  temperature: 1,
  seed: 11,
};

/** max |behaviour logprob − reference log p| over every sampled token. */
function maxGap(checkpoint: Checkpoint, groups: Completion[][]): number {
  let max = 0;
  groups.forEach((group, prompt) => {
    const promptIds = request.prompts[prompt] as number[];
    for (const completion of group) {
      const ids = [...promptIds, ...completion.tokenIds];
      const rows = referenceLogits(checkpoint, ids);
      completion.tokenIds.forEach((token, step) => {
        const row = rows[promptIds.length - 1 + step] as Float64Array;
        let top = -Infinity;
        for (const value of row) top = Math.max(top, value);
        let sum = 0;
        for (const value of row) sum += Math.exp(value - top);
        const logP = (row[token] as number) - top - Math.log(sum);
        max = Math.max(max, Math.abs(logP - (completion.logprobs[step] as number)));
      });
    }
  });
  return max;
}

const families = Object.keys(FAMILY_CONFIGS) as (keyof typeof FAMILY_CONFIGS)[];
const measured: string[] = [];
afterAll(() => console.log(`max |behaviour logprob − float64 log p|:\n${measured.join('\n')}`));

describe.each(families)('%s on both engines', (family) => {
  it(
    'samples the same tokens with the reference logprobs, before and after a weight update',
    async () => {
      const base = tinyFamilyCheckpoint(family, 1);
      const other = tinyFamilyCheckpoint(family, 2);
      const samplers = await Promise.all([
        createOnnxSampler({
          checkpoint: base,
          workers: 0,
          threads: 1,
          engine: 'optimum',
          eosTokenIds: [],
        }),
        createOnnxSampler({
          checkpoint: base,
          workers: 0,
          threads: 1,
          engine: 'loop',
          stepsPerRun: 4,
          eosTokenIds: [],
          weightSync: 'inputs',
        }),
      ]);
      try {
        for (const checkpoint of [base, other]) {
          if (checkpoint === other) {
            for (const sampler of samplers) {
              await sampler.updateWeights({ step: 1, tensors: other.tensors });
            }
          }
          const [optimum, loop] = await Promise.all(samplers.map((s) => s.sample(request)));
          expect(loop?.map((group) => group.map((c) => c.tokenIds))).toEqual(
            optimum?.map((group) => group.map((c) => c.tokenIds)),
          );
          expect(optimum?.flat().every((c) => c.tokenIds.length === 14)).toBe(true);
          const gaps = [optimum, loop].map((groups) =>
            maxGap(checkpoint, groups as Completion[][]),
          );
          measured.push(
            `${family} (${checkpoint === base ? 'initial' : 'updated'} weights): optimum ${gaps[0]?.toExponential(2)}, loop ${gaps[1]?.toExponential(2)}`,
          );
          for (const gap of gaps) expect(gap).toBeLessThan(1e-4);
        }
      } finally {
        await Promise.all(samplers.map((sampler) => sampler.close()));
      }
    },
    TIMEOUT,
  );
});

describe('a Llama 3 checkpoint with its tokenizer format and generation_config EOS list', () => {
  it(
    'stops at any of the three EOS ids (from generation_config.json, else config.json), chat prompts rendered',
    async () => {
      const files = buildFamilyTokenizer({
        family: 'llama3',
        corpus: ['What is 12+30? The answer is 42.', 'Think step by step.'],
        merges: 60,
        chatTemplate:
          '{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}',
      });
      const tokenizer = createTokenizer(files);
      const eos = ['<|end_of_text|>', '<|eom_id|>', '<|eot_id|>'].map(
        (token) => tokenizer.tokenToId(token) as number,
      );
      const config = parseModelConfig({
        ...FAMILY_CONFIGS.llama3,
        vocab_size: tokenizer.vocabSize,
      });
      const random = createRandomCheckpoint(config, { seed: 3, std: 0.3 });
      for (const source of ['generation_config', 'config'] as const) {
        const checkpoint =
          source === 'generation_config'
            ? { ...random, tokenizer: files, generationConfig: { eos_token_id: eos } }
            : { ...random, config: { ...random.config, eos_token_id: eos }, tokenizer: files };
        const sampler = await createOnnxSampler({
          checkpoint,
          workers: 0,
          threads: 1,
          promptFormat: 'chat',
        });
        try {
          const [group] = await sampler.sample({
            prompts: ['What is 12+30?'],
            n: 24,
            maxNewTokens: 64,
            temperature: 2,
            seed: 4,
          });
          const stops = (group ?? []).filter((c) => c.finishReason === 'stop');
          for (const completion of group ?? []) {
            const at = completion.tokenIds.findIndex((id) => eos.includes(id));
            const expected =
              completion.finishReason === 'stop' ? completion.tokenIds.length - 1 : -1;
            expect(at, source).toBe(expected);
          }
          const ends = new Set(stops.map((c) => c.tokenIds[c.tokenIds.length - 1]));
          expect(ends.size, source).toBeGreaterThanOrEqual(2);
        } finally {
          await sampler.close();
        }
      }
    },
    TIMEOUT,
  );
});
