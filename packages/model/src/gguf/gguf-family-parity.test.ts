import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import type { ModelArchitecture } from '../config/architecture.js';
import { parseModelConfig } from '../config/model-config.js';
import { ropeInverseFrequencies } from '../config/rope.js';
import type { ReferenceOptions } from '../reference/reference-forward.js';
import { TINY_FAMILY_CONFIGS } from '../testing/families.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';
import { buildFamilyTokenizer, TOKENIZER_FAMILIES } from '../tokenizer/family-tokenizer.js';
import { createTokenizer } from '../tokenizer/tokenizer.js';
import { exportGguf, type GgufDtype } from './export-gguf.js';
import {
  llamaCppGelu,
  maxAbsDifference,
  openInLlamaCpp,
  referenceGreedy,
  referenceLogProbs,
} from './llama-cpp-harness.js';

// Each family's tiny model (every special rule on: see TINY_FAMILY_CONFIGS) exported to GGUF and run in
// llama.cpp (node-llama-cpp's prebuilt CPU binary, F32 KV cache, flash attention off), against the
// float64 reference: log p of every vocab entry at every position, 14 tokens fed in 9 + 5 (the
// second call through llama.cpp's KV cache, its sliding-window cache for Gemma's local layers).
const files = buildCharTokenizer({ characters: 'abcdefghij0123456789+=? é→' });
const vocab = createTokenizer(files).vocabSize + 2;
const IDS = [1, 7, 11, 22, 6, 19, 30, 31, 8, 13, 5, 16, 24, 10];
const CHUNKS = [IDS.slice(0, 9), IDS.slice(9)];
const TOLERANCE: Partial<Record<GgufDtype, number>> = { f32: 2e-5, f16: 2e-2, q8_0: 0.5 };
/** A negative control must be off by far more than the f32 tolerance. */
const CONTROL_MINIMUM = 1e-2;

type Mutation = (arch: ModelArchitecture) => ModelArchitecture;
const layersWith = (
  arch: ModelArchitecture,
  edit: (
    layer: ModelArchitecture['layers'][number],
  ) => Partial<ModelArchitecture['layers'][number]>,
): ModelArchitecture => ({
  ...arch,
  layers: arch.layers.map((layer) => ({ ...layer, ...edit(layer) })),
});
const plainRope =
  (arch: ModelArchitecture, theta: (t: number) => number): Mutation =>
  () =>
    layersWith(arch, (layer) =>
      layer.rope.kind === 'rotary'
        ? {
            rope: {
              ...layer.rope,
              inverseFrequencies: ropeInverseFrequencies(
                theta(layer.rope.theta),
                arch.headDim,
                null,
              ),
            },
          }
        : {},
    );

/** Per family: the rule dropped from the reference (llama.cpp must then disagree). */
const CONTROLS: Record<keyof typeof TINY_FAMILY_CONFIGS, Record<string, Mutation>> = {
  qwen3: {
    'no q/k norm': (arch) => layersWith(arch, () => ({ qNorm: null, kNorm: null })),
  },
  llama3: {
    'no llama3 RoPE scaling': (arch) => plainRope(arch, (theta) => theta)(arch),
  },
  gemma3: {
    'w instead of (1 + w)': (arch) => ({ ...arch, normOffset: 0 }),
    'no sliding window': (arch) => layersWith(arch, () => ({ window: null })),
    'global θ on local layers': (arch) => {
      const global = arch.layers.find((layer) => layer.window === null)?.rope;
      return layersWith(arch, () => (global ? { rope: global } : {}));
    },
    '1/√head_dim instead of query_pre_attn_scalar': (arch) => ({
      ...arch,
      attentionScale: 1 / Math.sqrt(arch.headDim),
    }),
    'no √hidden embedding scale': (arch) => ({ ...arch, embeddingScale: 1 }),
    'no post-attention / post-feed-forward norms': (arch) =>
      layersWith(arch, () => ({ attentionOutputNorm: null, mlpOutputNorm: null })),
    'SiLU instead of tanh GELU': (arch) => ({ ...arch, activation: 'silu' }),
  },
  smollm3: {
    'RoPE on every layer': (arch) => {
      const rope = arch.layers.find((layer) => layer.rope.kind === 'rotary')?.rope;
      return layersWith(arch, () => (rope ? { rope } : {}));
    },
  },
};

function makeCheckpoint(family: keyof typeof TINY_FAMILY_CONFIGS, seed: number): Checkpoint {
  const config = parseModelConfig({ ...TINY_FAMILY_CONFIGS[family], vocab_size: vocab });
  return {
    ...createRandomCheckpoint(config, { seed, std: 0.2, perturbStd: 0.1 }),
    tokenizer: files,
  };
}

/** llama.cpp computes GELU through a float16 table: the reference does the same for its f32 check. */
function llamaCppRounding(family: string): ReferenceOptions {
  return family === 'gemma3' ? { gelu: llamaCppGelu } : {};
}

/**
 * The f32 tolerance of a comparison. For Gemma it is 2e-5 plus twice the noise floor of the fp16
 * GELU emulation: llama.cpp rounds each gate input (its float32 value, which differs from our
 * float64 one by ~1e-7 relative) to float16 before the table lookup, so an input within that
 * distance of a rounding boundary lands on the neighbouring entry (a 5e-4 relative step). The floor
 * is how far the emulated reference itself moves when its gate inputs are perturbed by ±1e-7 and
 * ±3e-7 relative (float32 noise); it must stay below 5e-3 (every Gemma negative control is off by > 0.3).
 */
function f32Tolerance(family: string, checkpoint: Checkpoint, emulated: Float64Array[]): number {
  if (family !== 'gemma3') return TOLERANCE.f32 as number;
  let floor = 0;
  for (const epsilon of [1e-7, -1e-7, 3e-7, -3e-7]) {
    const gelu = (x: number) => llamaCppGelu(x * (1 + epsilon));
    floor = Math.max(
      floor,
      maxAbsDifference(emulated, referenceLogProbs(checkpoint, IDS, { gelu })),
    );
  }
  expect(floor, 'GELU emulation noise floor').toBeLessThan(5e-3);
  measured.push(`  (gemma3 fp16 GELU emulation noise floor: ${floor.toExponential(2)})`);
  return (TOLERANCE.f32 as number) + 2 * floor;
}

let dir: string;
const measured: string[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-gguf-family-'));
});
afterAll(async () => {
  console.log(`max |Δ log p| vs the float64 reference:\n${measured.join('\n')}`);
  await rm(dir, { recursive: true, force: true });
});

describe('GGUF export of each family runs in llama.cpp like the float64 reference', () => {
  for (const [index, family] of (
    Object.keys(TINY_FAMILY_CONFIGS) as (keyof typeof TINY_FAMILY_CONFIGS)[]
  ).entries()) {
    it(`${family}: every position and vocab entry (f32, f16, q8_0), and each dropped rule fails`, async () => {
      const checkpoint = makeCheckpoint(family, 200 + index);
      const rounding = llamaCppRounding(family);
      const expected = referenceLogProbs(checkpoint, IDS, rounding);
      for (const dtype of ['f32', 'f16', 'q8_0'] as const) {
        const run = await openInLlamaCpp(dir, exportGguf(checkpoint, { dtype }), vocab);
        try {
          const actual = await run.logProbs(CHUNKS);
          const logP = maxAbsDifference(actual, expected);
          measured.push(`${family} ${dtype}: ${logP.toExponential(2)}`);
          const tolerance =
            dtype === 'f32'
              ? f32Tolerance(family, checkpoint, expected)
              : (TOLERANCE[dtype] as number);
          expect.soft(logP, `${family} ${dtype}`).toBeLessThan(tolerance);
          if (dtype !== 'f32') continue;
          if (family === 'gemma3') {
            const exact = maxAbsDifference(actual, referenceLogProbs(checkpoint, IDS));
            measured.push(`${family} f32 vs exact tanh GELU: ${exact.toExponential(2)}`);
          }
          for (const [rule, architecture] of Object.entries(CONTROLS[family])) {
            const control = referenceLogProbs(checkpoint, IDS, { ...rounding, architecture });
            const off = maxAbsDifference(actual, control);
            measured.push(`${family} negative control (${rule}): ${off.toExponential(2)}`);
            expect.soft(off, `${family}: ${rule}`).toBeGreaterThan(CONTROL_MINIMUM);
          }
        } finally {
          await run.dispose();
        }
      }
    });
  }

  const VARIANTS: Record<string, object> = {
    'gemma3 linear global RoPE ×4, sliding_window_pattern 3 (6 layers)': {
      ...TINY_FAMILY_CONFIGS.gemma3,
      num_hidden_layers: 6,
      layer_types: undefined,
      sliding_window_pattern: 3,
      rope_scaling: { rope_type: 'linear', factor: 4 },
    },
    "gemma3 62 layers (llama.cpp's 27B attention-scale rule), head_dim 16": {
      ...TINY_FAMILY_CONFIGS.gemma3,
      num_hidden_layers: 62,
      layer_types: undefined,
      head_dim: 16,
      query_pre_attn_scalar: 20,
    },
    'gemma3 MQA untied': {
      ...TINY_FAMILY_CONFIGS.gemma3,
      num_key_value_heads: 1,
      tie_word_embeddings: false,
    },
    'qwen3 MQA tied, linear RoPE ×2': {
      ...TINY_FAMILY_CONFIGS.qwen3,
      num_key_value_heads: 1,
      tie_word_embeddings: true,
      rope_scaling: { rope_type: 'linear', factor: 2 },
    },
    'llama linear RoPE ×2, GQA + attention bias': {
      ...TINY_FAMILY_CONFIGS.llama3,
      rope_scaling: { rope_type: 'linear', factor: 2 },
      attention_bias: true,
    },
  };

  it('f32 variants: linear scaling, pattern-derived layer kinds, the 27B scale rule, MQA, tying', async () => {
    for (const [index, [variant, json]] of Object.entries(VARIANTS).entries()) {
      const config = parseModelConfig({ ...json, vocab_size: vocab });
      const checkpoint = {
        ...createRandomCheckpoint(config, { seed: 300 + index, std: 0.2, perturbStd: 0.1 }),
        tokenizer: files,
      };
      const run = await openInLlamaCpp(dir, exportGguf(checkpoint), vocab);
      try {
        const family = variant.split(' ')[0] as string;
        const expected = referenceLogProbs(checkpoint, IDS, llamaCppRounding(family));
        const logP = maxAbsDifference(await run.logProbs(CHUNKS), expected);
        measured.push(`${variant} f32: ${logP.toExponential(2)}`);
        expect.soft(logP, variant).toBeLessThan(f32Tolerance(family, checkpoint, expected));
      } finally {
        await run.dispose();
      }
    }
  });

  it('f32 greedy generations are identical (every family)', async () => {
    for (const family of Object.keys(TINY_FAMILY_CONFIGS) as (keyof typeof TINY_FAMILY_CONFIGS)[]) {
      const checkpoint = makeCheckpoint(family, 31);
      const run = await openInLlamaCpp(dir, exportGguf(checkpoint), vocab);
      try {
        const prompt = IDS.slice(0, 5);
        expect(await run.greedy(prompt, 12), family).toEqual(
          referenceGreedy(checkpoint, prompt, 12, llamaCppRounding(family)),
        );
      } finally {
        await run.dispose();
      }
    }
  });
});

const TOKENIZER_CORPUS = [
  'Question: what is 12+30? Let me think. 12 plus 30 is 42.',
  "The answer is 42. It's 42, isn't it? Yes: 42!",
  'Naïve café, déjà vu, 日本語, emojis 🤔✨.',
  "It's what's there. IT'S WHAT'S THERE. (hello) (hello)",
  '  indented\n\n\tnew lines and    spaces  ',
];
const TOKENIZER_TEXTS = [
  ...TOKENIZER_CORPUS,
  'unseen: zebra quixotic 987654321 🦙',
  'Add 1230 and 4212: 5442, then 12+30=42 again',
  "HE'S (hello) she's",
  "I'M you'RE we'Ve  \n x",
];
const FAMILY_OF_TOKENIZER = {
  qwen3: 'qwen3',
  llama3: 'llama3',
  smollm3: 'smollm3',
  gemma3: 'gemma3',
} as const;

describe("each family's tokenizer format in llama.cpp (gpt2 + qwen2 / llama-bpe pre-tokenizers, SPM with byte fallback)", () => {
  it.each(TOKENIZER_FAMILIES)(
    '%s: llama.cpp tokenizes and detokenizes like @rlvr/model',
    async (family) => {
      const files = buildFamilyTokenizer({ family, corpus: TOKENIZER_CORPUS, merges: 150 });
      const tokenizer = createTokenizer(files);
      const config = parseModelConfig({
        ...TINY_FAMILY_CONFIGS[
          FAMILY_OF_TOKENIZER[family] === 'llama3' ? 'llama3' : FAMILY_OF_TOKENIZER[family]
        ],
        vocab_size: tokenizer.vocabSize,
      });
      const checkpoint = { ...createRandomCheckpoint(config, { seed: 1 }), tokenizer: files };
      const run = await openInLlamaCpp(dir, exportGguf(checkpoint), tokenizer.vocabSize);
      try {
        for (const text of TOKENIZER_TEXTS) {
          const ours = tokenizer.encode(text, { addSpecialTokens: false });
          expect(run.model.tokenize(text, false), text).toEqual(ours);
          expect(run.model.detokenize(ours as Token[], false), text).toBe(text);
        }
        const withSpecials =
          family === 'gemma3'
            ? '<start_of_turn>user\n12+30?<end_of_turn>'
            : family === 'llama3'
              ? '<|start_header_id|>user<|end_header_id|>\n\n12+30?<|eot_id|>'
              : '<|im_start|>user\n12+30?<|im_end|>';
        expect(run.model.tokenize(withSpecials, true)).toEqual(
          tokenizer.encode(withSpecials, { addSpecialTokens: false }),
        );
        expect(run.model.tokens.shouldPrependBosToken).toBe(
          family === 'llama3' || family === 'gemma3',
        );
      } finally {
        await run.dispose();
      }
    },
  );
});
