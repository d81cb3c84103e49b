import { createRng, type NamedTensor } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import type { TokenSequence } from '../batch/token-batch.js';
import { createLlamaModel } from '../model/llama-model.js';
import { createPolicyTrainer } from '../train/policy-trainer.js';

const config = parseLlamaConfig({
  hidden_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 40,
  vocab_size: 19,
  max_position_embeddings: 64,
});

function sequences(): TokenSequence[] {
  const rng = createRng(5);
  const ids = (count: number) => Array.from({ length: count }, () => Math.floor(rng.next() * 19));
  return Array.from({ length: 5 }, (_, i) => ({
    promptIds: ids(1 + (i % 3)),
    completionIds: ids(2 + ((i * 3) % 8)),
  }));
}

const byName = (tensors: readonly NamedTensor[]) => new Map(tensors.map((t) => [t.name, t.data]));

beforeAll(async () => {
  await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
});

describe('PolicyTrainer with LoRA (native engine)', () => {
  it('trains the adapters only: the base stays bit for bit, the loss falls, checkpoints and snapshots are the merged weights', async () => {
    const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.2 });
    const model = await createLlamaModel(checkpoint, { engine: 'native' });
    const trainer = await createPolicyTrainer(model, {
      schedule: { learningRate: 2e-2 },
      lora: { r: 4, alpha: 8, targetModules: 'all-linear' },
    });
    const batch = sequences();
    const first = trainer.sftStep(batch);
    let last = first;
    for (let step = 0; step < 15; step++) last = trainer.sftStep(batch);
    expect(last.loss).toBeLessThan(first.loss - 0.1);
    const base = byName(model.baseModel().toCheckpoint().tensors);
    for (const tensor of checkpoint.tensors) expect(base.get(tensor.name)).toEqual(tensor.data);
    // the merged weights differ from the base on every targeted projection, nowhere else
    const merged = byName(model.toCheckpoint().tensors);
    const snapshot = byName(model.toWeightSnapshot(trainer.step).tensors);
    for (const tensor of checkpoint.tensors) {
      const projection = /_proj\.weight$/.test(tensor.name);
      expect(merged.get(tensor.name), tensor.name).toEqual(snapshot.get(tensor.name));
      expect(
        merged.get(tensor.name)!.some((v, i) => v !== tensor.data[i]),
        tensor.name,
      ).toBe(projection);
    }
    // the logits are the merged model's
    const reloaded = await createLlamaModel(model.toCheckpoint(), { engine: 'native' });
    const input = { inputIds: [[1, 2, 3, 4]] };
    const a = model.logits(input)[0]!;
    const b = reloaded.logits(input)[0]!;
    for (const [t, row] of a.entries()) {
      for (const [i, v] of row.entries()) expect(Math.abs(v - b[t]![i]!)).toBeLessThan(1e-5);
    }
    expect(trainer.getState().optimizer.moments.every((m) => m.name.includes('.lora_'))).toBe(true);
    trainer.dispose();
    model.dispose();
    reloaded.dispose();
  });

  it('GRPO with β > 0: the reference is the base (adapters off, no copy): KL 0 at the start', async () => {
    const checkpoint = createRandomCheckpoint(config, { seed: 4, std: 0.2 });
    const model = await createLlamaModel(checkpoint, { engine: 'native' });
    const trainer = await createPolicyTrainer(model, {
      schedule: { learningRate: 2e-2 },
      grpo: { beta: 0.05, temperature: 0.8 },
      lora: { r: 4, targetModules: ['q_proj', 'v_proj', 'down_proj'], dropout: 0.1 },
    });
    expect(trainer.reference?.native?.store).toBe(model.native!.store);
    const batch = { sequences: sequences(), advantages: [1, -1, 0.5, -0.5, 0.2] };
    const [step1] = trainer.grpoStep(batch).steps;
    expect(step1!.kl).toBeCloseTo(0, 6);
    for (let i = 0; i < 5; i++) trainer.grpoStep(batch);
    const [later] = trainer.grpoStep(batch).steps;
    expect(later!.kl).toBeGreaterThan(1e-6);
    trainer.dispose();
    model.dispose();
  });

  it('refuses LoRA on the tfjs engine, unknown target modules, and a second trainer on the same model', async () => {
    const checkpoint = createRandomCheckpoint(config, { seed: 4, std: 0.2 });
    const tfjsModel = await createLlamaModel(checkpoint, { engine: 'tfjs' });
    await expect(createPolicyTrainer(tfjsModel, { lora: {} })).rejects.toThrow(/native engine/);
    const model = await createLlamaModel(checkpoint, { engine: 'native' });
    await expect(
      createPolicyTrainer(model, { lora: { targetModules: ['qproj'] } }),
    ).rejects.toThrow(/targetModules\[0\]/);
    await expect(createPolicyTrainer(model, { lora: { lora_alpha: 16 } as never })).rejects.toThrow(
      /did you mean 'alpha'/,
    );
    await createPolicyTrainer(model, { lora: {} });
    await expect(createPolicyTrainer(model, { lora: {} })).rejects.toThrow(/without adapters/);
    tfjsModel.dispose();
    model.dispose();
  });
});

describe('LoRA adapters as PEFT files', () => {
  it('a trained adapter saves as PEFT, loads into a fresh base and gives the same logits; mergeLora = the merged checkpoint', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { loadLoraAdapter, mergeLora, saveLoraAdapter } = await import('@rlvr/model');
    const checkpoint = createRandomCheckpoint(config, { seed: 8, std: 0.2 });
    const model = await createLlamaModel(checkpoint, { engine: 'native' });
    const trainer = await createPolicyTrainer(model, {
      schedule: { learningRate: 2e-2 },
      lora: { r: 2, alpha: 4, targetModules: ['k_proj', 'o_proj', 'up_proj'], rslora: true },
    });
    for (let step = 0; step < 4; step++) trainer.sftStep(sequences());
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-peft-'));
    try {
      await saveLoraAdapter(join(dir, 'adapter'), model.toLoraAdapter()!);
      const adapter = await loadLoraAdapter(join(dir, 'adapter'));
      expect(adapter.config).toMatchObject({ r: 2, alpha: 4, rslora: true });
      expect(adapter.config.targetModules).toEqual(['k_proj', 'o_proj', 'up_proj']);
      const fresh = await createLlamaModel(checkpoint, { engine: 'native' });
      await createPolicyTrainer(fresh, { lora: { adapter } });
      const input = { inputIds: [[3, 1, 4, 1, 5]] };
      const a = model.logits(input)[0]!;
      const b = fresh.logits(input)[0]!;
      for (const [t, row] of a.entries()) {
        for (const [i, v] of row.entries()) expect(v).toBe(b[t]![i]);
      }
      const merged = byName(mergeLora(checkpoint, adapter).tensors);
      for (const [name, data] of byName(model.toCheckpoint().tensors)) {
        const other = merged.get(name)!;
        for (let i = 0; i < data.length; i++)
          expect(Math.abs(data[i]! - other[i]!)).toBeLessThan(1e-6);
      }
      await expect(
        createPolicyTrainer(await createLlamaModel(checkpoint, { engine: 'native' }), {
          lora: { adapter, r: 4 },
        }),
      ).rejects.toThrow(/options\.lora\.r/);
      fresh.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
      trainer.dispose();
      model.dispose();
    }
  });
});
