import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { parseModelConfig } from '../config/model-config.js';
import { TINY_FAMILY_CONFIGS } from '../testing/families.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';
import { exportGguf } from './export-gguf.js';
import { parseGguf } from './gguf-reader.js';

const files = buildCharTokenizer({ characters: 'ab é' });

function makeCheckpoint(json: object): Checkpoint {
  const config = parseModelConfig({ ...json, vocab_size: 10 });
  return { ...createRandomCheckpoint(config, { seed: 3, perturbStd: 0.1 }), tokenizer: files };
}

function tensor(checkpoint: Checkpoint, name: string): Float32Array {
  return (checkpoint.tensors.find((item) => item.name === name) as { data: Float32Array }).data;
}

function refused(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error.parameter;
    throw error;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('exportGguf: each family under its llama.cpp architecture', () => {
  it('qwen3: q/k norm tensors, no permutation (NEOX), head_dim as key_length', () => {
    const checkpoint = makeCheckpoint(TINY_FAMILY_CONFIGS.qwen3);
    const gguf = parseGguf(exportGguf(checkpoint));
    expect(gguf.metadata['general.architecture']).toBe('qwen3');
    expect(gguf.metadata['qwen3.attention.key_length']).toBe(16);
    expect(gguf.readTensor('blk.1.attn_q_norm.weight')).toEqual(
      tensor(checkpoint, 'model.layers.1.self_attn.q_norm.weight'),
    );
    expect(gguf.readTensor('blk.0.attn_q.weight')).toEqual(
      tensor(checkpoint, 'model.layers.0.self_attn.q_proj.weight'),
    );
  });

  it("llama 3.x: rope_freqs.weight holds llama.cpp's per-frequency divisors", () => {
    const gguf = parseGguf(exportGguf(makeCheckpoint(TINY_FAMILY_CONFIGS.llama3)));
    // θ 10⁴, d 8, original context 64: bands high, medium, low, low (hand-worked)
    const smooth = (64 / (20 * Math.PI) - 1) / 3;
    const expected = [1, 1 / ((1 - smooth) / 8 + smooth), 8, 8];
    const freqs = gguf.readTensor('rope_freqs.weight');
    for (const [index, value] of expected.entries()) expect(freqs[index]).toBeCloseTo(value, 5);
    expect(gguf.metadata['llama.rope.scaling.type']).toBeUndefined();
  });

  it('gemma3: window, pattern and local θ; norms stored as 1 + w; q norm × the attention-scale fold', () => {
    const checkpoint = makeCheckpoint(TINY_FAMILY_CONFIGS.gemma3);
    const gguf = parseGguf(exportGguf(checkpoint));
    expect(gguf.metadata).toMatchObject({
      'general.architecture': 'gemma3',
      'gemma3.attention.sliding_window': 3,
      'gemma3.attention.sliding_window_pattern': 2,
      'gemma3.rope.freq_base_swa': 100,
      'gemma3.rope.freq_base': 10000,
    });
    const w = tensor(checkpoint, 'model.layers.2.pre_feedforward_layernorm.weight');
    const stored = gguf.readTensor('blk.2.ffn_norm.weight');
    for (const [index, value] of w.entries()) expect(stored[index]).toBeCloseTo(1 + value, 6);
    expect(gguf.readTensor('blk.2.post_attention_norm.weight')[0]).toBeCloseTo(
      1 + (tensor(checkpoint, 'model.layers.2.post_attention_layernorm.weight')[0] as number),
      6,
    );
    // query_pre_attn_scalar 12, llama.cpp scales by 1/√head_dim = 1/√8: q norm × √(8/12)
    const qNorm = tensor(checkpoint, 'model.layers.0.self_attn.q_norm.weight');
    expect(gguf.readTensor('blk.0.attn_q_norm.weight')[0]).toBeCloseTo(
      (1 + (qNorm[0] as number)) * Math.sqrt(8 / 12),
      6,
    );
    expect(gguf.tensors.map((info) => info.name)).toContain('blk.3.post_ffw_norm.weight');
  });

  it('refuses, naming the field, what the llama.cpp architecture cannot express', () => {
    const gemma = TINY_FAMILY_CONFIGS.gemma3;
    const irregular = {
      ...gemma,
      layer_types: ['sliding_attention', 'full_attention', 'full_attention', 'sliding_attention'],
    };
    expect(refused(() => exportGguf(makeCheckpoint(irregular)))).toBe(
      'checkpoint.config.layer_types',
    );
    const everySecond = { ...TINY_FAMILY_CONFIGS.smollm3, no_rope_layer_interval: 2 };
    expect(refused(() => exportGguf(makeCheckpoint(everySecond)))).toBe(
      'checkpoint.config.no_rope_layers',
    );
    const qwenLlama3 = {
      ...TINY_FAMILY_CONFIGS.qwen3,
      rope_scaling: TINY_FAMILY_CONFIGS.llama3.rope_scaling,
    };
    expect(refused(() => exportGguf(makeCheckpoint(qwenLlama3)))).toBe(
      'checkpoint.config.rope_scaling.rope_type',
    );
  });

  it('gemma3 with every layer sliding writes pattern 0; with none, no sliding-window keys', () => {
    const all = { ...TINY_FAMILY_CONFIGS.gemma3, layer_types: Array(4).fill('sliding_attention') };
    expect(parseGguf(exportGguf(makeCheckpoint(all))).metadata).toMatchObject({
      'gemma3.attention.sliding_window_pattern': 0,
    });
    const none = { ...TINY_FAMILY_CONFIGS.gemma3, layer_types: Array(4).fill('full_attention') };
    const metadata = parseGguf(exportGguf(makeCheckpoint(none))).metadata;
    expect(metadata['gemma3.attention.sliding_window']).toBeUndefined();
  });
});
