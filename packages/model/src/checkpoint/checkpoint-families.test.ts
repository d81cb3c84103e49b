import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../config/model-config.js';
import { ModelLoadError } from '../errors/model-load-error.js';
import { referenceForward } from '../reference/reference-forward.js';
import { encodeSafetensors } from '../safetensors/safetensors.js';
import { GEMMA_3_1B, QWEN3_0_6B, TINY_FAMILY_CONFIGS } from '../testing/families.js';
import { loadCheckpoint, saveCheckpoint } from './checkpoint-io.js';
import { createRandomCheckpoint } from './random-init.js';
import { llamaTensorNames } from './tensor-names.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-families-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('checkpoints of every family', () => {
  it("have the Hugging Face tensor names of each family's real checkpoints", () => {
    const qwen3 = llamaTensorNames(parseModelConfig(QWEN3_0_6B));
    expect(qwen3).toContain('model.layers.27.self_attn.q_norm.weight');
    expect(qwen3).toContain('model.layers.27.self_attn.k_norm.weight');
    expect(qwen3).not.toContain('lm_head.weight'); // tied
    const gemma = llamaTensorNames(parseModelConfig(GEMMA_3_1B));
    expect(gemma.filter((name) => name.startsWith('model.layers.25.'))).toEqual([
      'model.layers.25.self_attn.q_proj.weight',
      'model.layers.25.self_attn.k_proj.weight',
      'model.layers.25.self_attn.v_proj.weight',
      'model.layers.25.self_attn.o_proj.weight',
      'model.layers.25.self_attn.q_norm.weight',
      'model.layers.25.self_attn.k_norm.weight',
      'model.layers.25.mlp.gate_proj.weight',
      'model.layers.25.mlp.up_proj.weight',
      'model.layers.25.mlp.down_proj.weight',
      'model.layers.25.input_layernorm.weight',
      'model.layers.25.post_attention_layernorm.weight',
      'model.layers.25.pre_feedforward_layernorm.weight',
      'model.layers.25.post_feedforward_layernorm.weight',
    ]);
  });

  it('random init: Gemma norm weights start at 0 (its norms scale by 1 + w), the others at 1', () => {
    const gemma = createRandomCheckpoint(
      parseModelConfig({ ...TINY_FAMILY_CONFIGS.gemma3, vocab_size: 8 }),
      {
        seed: 1,
      },
    );
    const qwen = createRandomCheckpoint(
      parseModelConfig({ ...TINY_FAMILY_CONFIGS.qwen3, vocab_size: 8 }),
      {
        seed: 1,
      },
    );
    const norm = (checkpoint: typeof gemma, name: string) =>
      checkpoint.tensors.find((tensor) => tensor.name === name)?.data[0];
    expect(norm(gemma, 'model.layers.0.post_feedforward_layernorm.weight')).toBe(0);
    expect(norm(gemma, 'model.layers.0.self_attn.q_norm.weight')).toBe(0);
    expect(norm(qwen, 'model.layers.0.self_attn.q_norm.weight')).toBe(1);
  });

  it.each(Object.keys(TINY_FAMILY_CONFIGS) as (keyof typeof TINY_FAMILY_CONFIGS)[])(
    '%s: save and load round-trip the config and weights (same forward)',
    async (family) => {
      const config = parseModelConfig({ ...TINY_FAMILY_CONFIGS[family], vocab_size: 12 });
      const checkpoint = createRandomCheckpoint(config, { seed: 2, perturbStd: 0.1 });
      const target = join(dir, family);
      await saveCheckpoint(target, checkpoint);
      const loaded = await loadCheckpoint(target);
      expect(loaded.config).toEqual(config);
      const ids = { inputIds: [[1, 5, 7, 2, 9]] };
      expect(referenceForward(loaded, ids).logits.data).toEqual(
        referenceForward(checkpoint, ids).logits.data,
      );
    },
  );

  it('a folder with an unimplemented field fails at load, naming the field (never a silent wrong forward)', async () => {
    const config = parseModelConfig({ ...TINY_FAMILY_CONFIGS.gemma3, vocab_size: 12 });
    const checkpoint = createRandomCheckpoint(config, { seed: 3 });
    const target = join(dir, 'softcapped');
    await mkdir(target);
    await writeFile(
      join(target, 'config.json'),
      JSON.stringify({ ...config, final_logit_softcapping: 30 }),
    );
    await writeFile(join(target, 'model.safetensors'), encodeSafetensors(checkpoint.tensors));
    const error = await loadCheckpoint(target).catch((caught: unknown) => caught);
    expect(ModelLoadError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('config.final_logit_softcapping');
    const cause = (error as Error).cause;
    expect(InvalidArgumentError.isInstance(cause) && cause.parameter).toBe(
      'config.final_logit_softcapping',
    );
  });
});
