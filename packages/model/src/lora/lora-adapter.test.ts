import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng, type NamedTensor } from '@rlvr/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { parseLlamaConfig } from '../config/llama-config.js';
import {
  LORA_ADAPTER_FILES,
  type LoraAdapter,
  loadLoraAdapter,
  loraScale,
  mergeLora,
  saveLoraAdapter,
} from './lora-adapter.js';

const config = parseLlamaConfig({
  hidden_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 24,
  vocab_size: 11,
});
const root = await mkdtemp(join(tmpdir(), 'rlvr-lora-'));
afterAll(() => rm(root, { recursive: true, force: true }));

/** A random adapter on q_proj and down_proj of both layers, r 2, α 6. */
function adapter(): LoraAdapter {
  const rng = createRng(3);
  const tensors: NamedTensor[] = [];
  const shapes = { q_proj: [16, 16], down_proj: [16, 24] } as const;
  for (let layer = 0; layer < 2; layer++) {
    for (const [module, [out, input]] of Object.entries(shapes)) {
      const part = module === 'q_proj' ? 'self_attn' : 'mlp';
      for (const [which, shape] of [
        ['A', [2, input]],
        ['B', [out, 2]],
      ] as const) {
        const size = shape[0] * shape[1];
        tensors.push({
          name: `base_model.model.model.layers.${layer}.${part}.${module}.lora_${which}.weight`,
          shape: [...shape],
          data: Float32Array.from({ length: size }, () => rng.next() - 0.5),
        });
      }
    }
  }
  return {
    config: {
      r: 2,
      alpha: 6,
      dropout: 0.05,
      targetModules: ['q_proj', 'down_proj'],
      rslora: false,
      baseModel: null,
    },
    tensors,
  };
}

describe('LoRA adapters in PEFT’s format', () => {
  it('round-trips through adapter_config.json + adapter_model.safetensors with PEFT’s fields and names', async () => {
    const dir = join(root, 'adapter');
    const original = adapter();
    await saveLoraAdapter(dir, original);
    expect((await readdir(dir)).sort()).toEqual([
      LORA_ADAPTER_FILES.config,
      LORA_ADAPTER_FILES.weights,
    ]);
    const json = JSON.parse(await readFile(join(dir, LORA_ADAPTER_FILES.config), 'utf8'));
    expect(json).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 2,
      lora_alpha: 6,
      lora_dropout: 0.05,
      target_modules: ['q_proj', 'down_proj'],
      bias: 'none',
      use_rslora: false,
      use_dora: false,
      fan_in_fan_out: false,
    });
    const loaded = await loadLoraAdapter(dir);
    expect(loaded.config).toEqual(original.config);
    expect(loaded.tensors.map((t) => t.name).sort()).toEqual(
      original.tensors.map((t) => t.name).sort(),
    );
    for (const tensor of original.tensors) {
      expect(loaded.tensors.find((t) => t.name === tensor.name)!.data).toEqual(tensor.data);
    }
    // saving again over its own folder replaces it; a foreign folder is refused untouched
    await saveLoraAdapter(dir, original);
    const foreign = join(root, 'foreign');
    await saveLoraAdapter(join(foreign, 'x'), original);
    await writeFile(join(foreign, 'notes.txt'), 'mine');
    await expect(saveLoraAdapter(foreign, original)).rejects.toMatchObject({
      code: 'WOULD_OVERWRITE',
    });
    expect(await readFile(join(foreign, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('refuses PEFT settings it does not implement, by name', async () => {
    const dir = join(root, 'dora');
    await saveLoraAdapter(dir, adapter());
    const path = join(dir, LORA_ADAPTER_FILES.config);
    const json = JSON.parse(await readFile(path, 'utf8'));
    for (const [field, value] of [
      ['use_dora', true],
      ['fan_in_fan_out', true],
      ['bias', 'all'],
      ['rank_pattern', { q_proj: 4 }],
      ['modules_to_save', ['lm_head']],
      ['peft_type', 'IA3'],
    ] as const) {
      await writeFile(path, JSON.stringify({ ...json, [field]: value }));
      await expect(loadLoraAdapter(dir)).rejects.toThrow(new RegExp(`'${field}'`));
    }
  });

  it('mergeLora gives W + s·B·A (float64 hand check) on the adapted projections and shares the others', () => {
    const checkpoint = createRandomCheckpoint(config, { seed: 1 });
    const lora = adapter();
    const merged = mergeLora(checkpoint, lora);
    const s = loraScale(lora.config);
    expect(s).toBe(3);
    const get = (tensors: readonly NamedTensor[], name: string) =>
      tensors.find((t) => t.name === name)!;
    for (const name of [
      'model.layers.1.mlp.down_proj.weight',
      'model.layers.0.self_attn.q_proj.weight',
    ]) {
      const w = get(checkpoint.tensors, name);
      const m = get(merged.tensors, name);
      const prefix = `base_model.model.${name.replace(/\.weight$/, '')}`;
      const a = get(lora.tensors, `${prefix}.lora_A.weight`);
      const b = get(lora.tensors, `${prefix}.lora_B.weight`);
      const [out, input] = w.shape as [number, number];
      for (let row = 0; row < out; row++) {
        for (let col = 0; col < input; col++) {
          let want = w.data[row * input + col]!;
          for (let k = 0; k < 2; k++) want += s * b.data[row * 2 + k]! * a.data[k * input + col]!;
          expect(m.data[row * input + col]).toBeCloseTo(want, 5);
        }
      }
    }
    expect(get(merged.tensors, 'model.layers.0.self_attn.k_proj.weight')).toBe(
      get(checkpoint.tensors, 'model.layers.0.self_attn.k_proj.weight'),
    );
    const rslora = mergeLora(checkpoint, { ...lora, config: { ...lora.config, rslora: true } });
    expect(rslora.tensors).toHaveLength(checkpoint.tensors.length);
    expect(loraScale({ r: 4, alpha: 8, rslora: true })).toBe(4);
  });

  it('mergeLora refuses an adapter that does not fit the checkpoint', () => {
    const checkpoint = createRandomCheckpoint({ ...config, num_hidden_layers: 1 }, { seed: 1 });
    expect(() => mergeLora(checkpoint, adapter())).toThrow(/a projection of the checkpoint/);
    const lora = adapter();
    lora.tensors[0] = { ...lora.tensors[0]!, shape: [3, 16], data: new Float32Array(48) };
    expect(() => mergeLora(createRandomCheckpoint(config, { seed: 1 }), lora)).toThrow(/\[2, in\]/);
  });
});
