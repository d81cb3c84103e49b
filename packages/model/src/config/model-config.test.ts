import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import {
  GEMMA_3_1B,
  LLAMA_3_2_1B,
  QWEN3_0_6B,
  SMOLLM3_3B,
  TINY_FAMILY_CONFIGS,
} from '../testing/families.js';
import { modelArchitecture } from './architecture.js';
import { countParameters, parseLlamaConfig } from './llama-config.js';
import { parseModelConfig } from './model-config.js';
import { ropeInverseFrequencies } from './rope.js';

function parameterOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error.parameter;
    throw error;
  }
  return undefined;
}

describe('parseModelConfig: the real config.json of each family', () => {
  it.each([
    ['Qwen3-0.6B', QWEN3_0_6B, 596_049_920],
    ['Llama-3.2-1B', LLAMA_3_2_1B, 1_235_814_400],
    ['Gemma-3-1B', GEMMA_3_1B, 999_885_952],
    ['SmolLM3-3B', SMOLLM3_3B, 3_075_098_624],
  ])('%s parses and has its published parameter count', (_name, json, parameters) => {
    const config = parseModelConfig(json);
    expect(countParameters(config)).toBe(parameters);
    expect(parseModelConfig(config)).toEqual(config); // idempotent: a saved config re-reads the same
    expect(parseModelConfig(JSON.parse(JSON.stringify(config)))).toEqual(config);
  });

  it('Qwen3: q/k norms per head, head_dim 128 ≠ hidden / heads, tied', () => {
    const arch = modelArchitecture(parseModelConfig(QWEN3_0_6B));
    expect(arch.headDim).toBe(128);
    expect(arch.layers[3]).toMatchObject({
      qNorm: 'model.layers.3.self_attn.q_norm.weight',
      kNorm: 'model.layers.3.self_attn.k_norm.weight',
      window: null,
      attentionOutputNorm: null,
      mlpNorm: 'model.layers.3.post_attention_layernorm.weight',
      mlpOutputNorm: null,
    });
    expect(arch).toMatchObject({ normOffset: 0, activation: 'silu', embeddingScale: 1 });
    expect(arch.attentionScale).toBeCloseTo(1 / Math.sqrt(128), 15);
    expect(arch.lmHead).toBe('model.embed_tokens.weight');
  });

  it("Llama 3.2: rope_type 'llama3' inverse frequencies (checked against llama.cpp's rope_freqs rule)", () => {
    const config = parseModelConfig(LLAMA_3_2_1B);
    expect(config.rope_scaling).toEqual(LLAMA_3_2_1B.rope_scaling);
    const rope = modelArchitecture(config).layers[0]?.rope;
    if (rope?.kind !== 'rotary') throw new Error('rotary expected');
    // llama.cpp's convert_hf_to_gguf: a factor per frequency, theta = p · f / factor.
    const { factor, low_freq_factor: low, high_freq_factor: high } = LLAMA_3_2_1B.rope_scaling;
    const context = LLAMA_3_2_1B.rope_scaling.original_max_position_embeddings;
    const bands = { high: 0, medium: 0, low: 0 };
    for (let i = 0; i < 32; i++) {
      const f = 500000 ** (-(2 * i) / 64);
      const wavelength = (2 * Math.PI) / f;
      let ropeFactor: number;
      if (wavelength < context / high) {
        ropeFactor = 1;
        bands.high++;
      } else if (wavelength > context / low) {
        ropeFactor = factor;
        bands.low++;
      } else {
        const smooth = (context / wavelength - low) / (high - low);
        ropeFactor = 1 / ((1 - smooth) / factor + smooth);
        bands.medium++;
      }
      expect(rope.inverseFrequencies[i]).toBeCloseTo(f / ropeFactor, 15);
    }
    expect(bands).toEqual({ high: 15, medium: 3, low: 14 });
  });

  it('Gemma 3 1B: 5 sliding layers (window 512, θ 10⁴) per global one (θ 10⁶), four (1 + w) norms, GeGLU, √d', () => {
    const arch = modelArchitecture(parseModelConfig(GEMMA_3_1B));
    const globals = arch.layers
      .filter((layer) => layer.window === null)
      .map((layer) => layer.index);
    expect(globals).toEqual([5, 11, 17, 23]);
    const [sliding, global] = [arch.layers[0], arch.layers[5]];
    expect(sliding).toMatchObject({ window: 512, attentionType: 'sliding_attention' });
    expect(sliding?.rope).toMatchObject({ kind: 'rotary', theta: 10000, scaling: null });
    expect(global?.rope).toMatchObject({ kind: 'rotary', theta: 1e6, scaling: null });
    expect(sliding).toMatchObject({
      attentionNorm: 'model.layers.0.input_layernorm.weight',
      qNorm: 'model.layers.0.self_attn.q_norm.weight',
      attentionOutputNorm: 'model.layers.0.post_attention_layernorm.weight',
      mlpNorm: 'model.layers.0.pre_feedforward_layernorm.weight',
      mlpOutputNorm: 'model.layers.0.post_feedforward_layernorm.weight',
    });
    expect(arch).toMatchObject({ normOffset: 1, activation: 'gelu_tanh', tiedEmbeddings: true });
    expect(arch.embeddingScale).toBe(Math.fround(Math.sqrt(1152)));
    expect(arch.attentionScale).toBe(1 / 16);
  });

  it('SmolLM3: every 4th layer has no RoPE (no_rope_layers), θ 5e6, pretraining_tp ignored', () => {
    const arch = modelArchitecture(parseModelConfig(SMOLLM3_3B));
    const nope = arch.layers.filter((layer) => layer.rope.kind === 'none').map((l) => l.index);
    expect(nope).toEqual([3, 7, 11, 15, 19, 23, 27, 31, 35]);
    expect(arch.layers[0]?.rope).toMatchObject({ kind: 'rotary', theta: 5e6 });
    const derived = parseModelConfig({ ...SMOLLM3_3B, no_rope_layers: undefined });
    expect(derived.no_rope_layers).toEqual(SMOLLM3_3B.no_rope_layers);
  });

  it("transformers 5's rope_parameters and layer_types read the same as the 4.x fields", () => {
    const { rope_scaling, rope_theta, ...llama } = LLAMA_3_2_1B;
    expect(
      parseModelConfig({ ...llama, rope_parameters: { ...rope_scaling, rope_theta } }),
    ).toEqual(parseModelConfig(LLAMA_3_2_1B));
    const { rope_local_base_freq, sliding_window_pattern, ...gemma } = GEMMA_3_1B;
    const v5 = {
      ...gemma,
      rope_theta: undefined,
      rope_scaling: undefined,
      layer_types: parseModelConfig(GEMMA_3_1B).layer_types,
      rope_parameters: {
        full_attention: { rope_type: 'default', rope_theta: 1e6 },
        sliding_attention: { rope_type: 'default', rope_theta: 10000 },
      },
    };
    expect(parseModelConfig(v5)).toEqual(parseModelConfig(GEMMA_3_1B));
    const linear = parseModelConfig({
      ...v5,
      rope_parameters: {
        ...v5.rope_parameters,
        full_attention: { rope_type: 'linear', factor: 8, rope_theta: 1e6 },
      },
    });
    expect(linear.rope_scaling).toEqual({ rope_type: 'linear', factor: 8 });
    const rope = modelArchitecture(linear).layers[5]?.rope;
    expect(rope?.kind === 'rotary' && rope.inverseFrequencies[1]).toBeCloseTo(
      1e6 ** (-2 / 256) / 8,
      15,
    );
  });

  it('tiny test configs of every family parse', () => {
    for (const json of Object.values(TINY_FAMILY_CONFIGS)) {
      expect(() => parseModelConfig({ ...json, vocab_size: 40 })).not.toThrow();
    }
  });
});

describe('parseModelConfig refuses what is not implemented, by name', () => {
  it.each([
    [
      LLAMA_3_2_1B,
      { rope_scaling: { rope_type: 'yarn', factor: 4 } },
      'config.rope_scaling.rope_type',
    ],
    [
      LLAMA_3_2_1B,
      { rope_scaling: { rope_type: 'dynamic', factor: 2 } },
      'config.rope_scaling.rope_type',
    ],
    [
      LLAMA_3_2_1B,
      { rope_scaling: { ...LLAMA_3_2_1B.rope_scaling, low_freq_factor: undefined } },
      'config.rope_scaling.low_freq_factor',
    ],
    [
      LLAMA_3_2_1B,
      { rope_parameters: { rope_type: 'longrope', rope_theta: 1 } },
      'config.rope_parameters.rope_type',
    ],
    [
      LLAMA_3_2_1B,
      { rope_parameters: { rope_type: 'default', partial_rotary_factor: 0.5 } },
      'config.rope_parameters.partial_rotary_factor',
    ],
    [LLAMA_3_2_1B, { mlp_bias: true }, 'config.mlp_bias'],
    [QWEN3_0_6B, { use_sliding_window: true, sliding_window: 4096 }, 'config.use_sliding_window'],
    [QWEN3_0_6B, { layer_types: Array(28).fill('sliding_attention') }, 'config.layer_types'],
    [QWEN3_0_6B, { attention_bias: true }, 'config.attention_bias'],
    [QWEN3_0_6B, { num_key_value_heads: undefined }, 'config.num_key_value_heads'],
    [QWEN3_0_6B, { hidden_act: 'gelu' }, 'config.hidden_act'],
    [GEMMA_3_1B, { final_logit_softcapping: 30 }, 'config.final_logit_softcapping'],
    [GEMMA_3_1B, { attn_logit_softcapping: 50 }, 'config.attn_logit_softcapping'],
    [GEMMA_3_1B, { use_bidirectional_attention: true }, 'config.use_bidirectional_attention'],
    [GEMMA_3_1B, { hidden_activation: 'gelu' }, 'config.hidden_activation'],
    [GEMMA_3_1B, { layer_types: ['sliding_attention'] }, 'config.layer_types'],
    [GEMMA_3_1B, { sliding_window: 0 }, 'config.sliding_window'],
    [GEMMA_3_1B, { model_type: 'gemma3' }, 'config.model_type'],
    [
      GEMMA_3_1B,
      { rope_parameters: { sliding_attention: { rope_type: 'linear', factor: 2 } } },
      'config.rope_parameters.sliding_attention.rope_type',
    ],
    [SMOLLM3_3B, { no_rope_layers: [1, 1, 1] }, 'config.no_rope_layers'],
    [SMOLLM3_3B, { use_sliding_window: true, sliding_window: 4096 }, 'config.use_sliding_window'],
    [
      SMOLLM3_3B,
      { rope_scaling: { rope_type: 'yarn', factor: 2, original_max_position_embeddings: 65536 } },
      'config.rope_scaling.rope_type',
    ],
  ])('case %#', (base, patch, parameter) => {
    expect(parameterOf(() => parseModelConfig({ ...base, ...patch }))).toBe(parameter);
  });

  it('parseLlamaConfig (the families every engine implements) still refuses the new ones', () => {
    expect(parameterOf(() => parseLlamaConfig(QWEN3_0_6B))).toBe('config.model_type');
    expect(parameterOf(() => parseLlamaConfig(GEMMA_3_1B))).toBe('config.model_type');
    expect(parameterOf(() => parseLlamaConfig(LLAMA_3_2_1B))).toBe('config.rope_scaling');
    const { rope_scaling, rope_theta, ...v5 } = LLAMA_3_2_1B;
    expect(
      parameterOf(() =>
        parseLlamaConfig({ ...v5, rope_parameters: { ...rope_scaling, rope_theta } }),
      ),
    ).toBe('config.rope_parameters');
  });
});

describe('ropeInverseFrequencies', () => {
  it('plain, linear and llama3 (hand-worked, θ 10⁴, d 8, original context 64)', () => {
    const plain = ropeInverseFrequencies(10000, 8, null);
    for (const [i, f] of [1, 0.1, 0.01, 0.001].entries()) expect(plain[i]).toBeCloseTo(f, 15);
    expect(ropeInverseFrequencies(10000, 8, { rope_type: 'linear', factor: 4 })[1]).toBeCloseTo(
      0.025,
      15,
    );
    const llama3 = ropeInverseFrequencies(10000, 8, {
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 64,
    });
    // wavelengths 2π, 20π, 200π, 2000π against the band edges 16 and 64
    const smooth = (64 / (20 * Math.PI) - 1) / 3;
    expect(llama3[0]).toBe(1);
    expect(llama3[1]).toBeCloseTo(0.1 * ((1 - smooth) / 8 + smooth), 15);
    expect(llama3[2]).toBeCloseTo(0.01 / 8, 15);
    expect(llama3[3]).toBeCloseTo(0.001 / 8, 15);
  });
});
