import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { QWEN2_5_0_5B, SMOLLM2_135M } from '../testing/families.js';
import { countParameters, llamaBiases, parseLlamaConfig } from './llama-config.js';

// Verbatim config.json files of public checkpoints (Hugging Face Hub), trimmed of nothing:
// SmolLM2-135M's is the shared one (testing/families.ts).
const smolLM2 = SMOLLM2_135M;
// Qwen2.5-0.5B-Instruct's: the base model's (testing/families.ts) but for these fields
const qwen25 = {
  ...QWEN2_5_0_5B,
  eos_token_id: 151645,
  max_window_layers: 21,
  transformers_version: '4.43.1',
};

describe('parseLlamaConfig', () => {
  it('parses SmolLM2-135M and counts its 134.5M parameters', () => {
    const config = parseLlamaConfig(smolLM2);
    expect(config).toMatchObject({
      model_type: 'llama',
      head_dim: 64,
      num_key_value_heads: 3,
      tie_word_embeddings: true,
      attention_bias: false,
      bos_token_id: 0,
      eos_token_id: 0,
      pad_token_id: null,
    });
    // Published size of SmolLM2-135M: 134,515,008 parameters.
    expect(countParameters(config)).toBe(134_515_008);
  });

  it('parses Qwen2.5-0.5B with implicit q/k/v bias and counts its 494M parameters', () => {
    const config = parseLlamaConfig(qwen25);
    expect(config.attention_bias).toBe(true);
    expect(llamaBiases(config)).toEqual({ qkv: true, o: false });
    expect(config.head_dim).toBe(64);
    // Published size of Qwen2.5-0.5B: 494,032,768 parameters.
    expect(countParameters(config)).toBe(494_032_768);
  });

  it('fills Hugging Face defaults', () => {
    const config = parseLlamaConfig({
      hidden_size: 8,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      intermediate_size: 16,
      vocab_size: 10,
    });
    expect(config).toEqual({
      model_type: 'llama',
      architectures: ['LlamaForCausalLM'],
      hidden_size: 8,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      num_key_value_heads: 2,
      head_dim: 4,
      intermediate_size: 16,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      vocab_size: 10,
      tie_word_embeddings: false,
      max_position_embeddings: 2048,
      attention_bias: false,
      hidden_act: 'silu',
      initializer_range: 0.02,
      bos_token_id: null,
      eos_token_id: null,
      pad_token_id: null,
    });
    expect(parseLlamaConfig(config)).toEqual(config);
  });

  it('accepts a list of eos ids (Llama 3)', () => {
    const config = parseLlamaConfig({ ...smolLM2, eos_token_id: [1, 2] });
    expect(config.eos_token_id).toEqual([1, 2]);
  });

  it.each([
    [{ hidden_size: 0 }, 'config.hidden_size'],
    [{ hidden_size: 64.5 }, 'config.hidden_size'],
    [{ num_hidden_layers: undefined }, 'config.num_hidden_layers'],
    [{ num_key_value_heads: 2 }, 'config.num_key_value_heads'],
    [{ model_type: 'gpt2' }, 'config.model_type'],
    [{ hidden_act: 'gelu' }, 'config.hidden_act'],
    [{ rope_scaling: { type: 'llama3', factor: 8 } }, 'config.rope_scaling'],
    [{ head_dim: 7 }, 'config.head_dim'],
    [{ rms_norm_eps: -1 }, 'config.rms_norm_eps'],
    [{ tie_word_embeddings: 'yes' }, 'config.tie_word_embeddings'],
    [{ eos_token_id: [1, -2] }, 'config.eos_token_id'],
    [{ mlp_bias: true }, 'config.mlp_bias'],
    [{ use_sliding_window: true }, 'config.use_sliding_window'],
  ])('rejects %j naming %s', (patch, parameter) => {
    let caught: unknown;
    try {
      parseLlamaConfig({ ...smolLM2, ...patch });
    } catch (error) {
      caught = error;
    }
    expect(InvalidArgumentError.isInstance(caught)).toBe(true);
    expect((caught as InvalidArgumentError).parameter).toBe(parameter);
    expect((caught as Error).message).toContain('parseLlamaConfig()');
  });

  it('rejects non-objects', () => {
    expect(() => parseLlamaConfig(null)).toThrow(/parameter 'config'/);
    expect(() => parseLlamaConfig([1])).toThrow(/config\.json object/);
  });
});
