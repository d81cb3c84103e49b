import { MemoryLimitError } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { createLlamaModel } from '../model/llama-model.js';
import { planMemory } from './memory-plan.js';
import { createPolicyTrainer } from './policy-trainer.js';

const GiB = 2 ** 30;
// Qwen2.5-0.5B's shape (494M parameters, tied)
const QWEN_05B = {
  model_type: 'qwen2',
  hidden_size: 896,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  intermediate_size: 4864,
  vocab_size: 151936,
  tie_word_embeddings: true,
};

describe('planMemory', () => {
  it('counts the parts of full fine-tuning and of LoRA from the config alone', () => {
    const full = planMemory(QWEN_05B, { memoryLimitBytes: 64 * GiB });
    const params = 494_032_768;
    expect(full.parts.weights).toBe(4 * params);
    expect(full.parts.gradients).toBe(4 * params);
    expect(full.parts.optimizer).toBe(8 * params);
    expect(full.parts.reference).toBe(0);
    expect(full.fits).toBe(true);
    const grpo = planMemory(QWEN_05B, { memoryLimitBytes: 64 * GiB, grpo: { beta: 0.04 } });
    expect(grpo.parts.reference).toBe(4 * params);
    const lora = planMemory(QWEN_05B, {
      memoryLimitBytes: 64 * GiB,
      grpo: { beta: 0.04 },
      lora: { r: 16, targetModules: 'all-linear' },
    });
    // r·(in + out) per projection: 16 · (896·6 + 128·4 + 4864·3 + 896·3) · 24 layers
    const adapters = 16 * (896 * 2 + (896 + 128) * 2 + 896 * 2 + (896 + 4864) * 3) * 24;
    expect(lora.parts.adapters).toBe(4 * adapters);
    expect(lora.parts.gradients).toBe(4 * adapters);
    expect(lora.parts.optimizer).toBe(8 * adapters);
    expect(lora.parts.reference).toBe(0); // the base with adapters off
  });

  it("'auto' keeps activations where they fit and recomputes them where they would not", () => {
    const roomy = planMemory(QWEN_05B, {
      memoryLimitBytes: 64 * GiB,
      lora: { r: 16 },
      microBatchTokens: 2048,
      rowLength: 256,
    });
    expect(roomy.gradientCheckpointing).toBe(false);
    const tight = planMemory(QWEN_05B, {
      memoryLimitBytes: 4 * GiB,
      lora: { r: 16 },
      microBatchTokens: 2048,
      rowLength: 256,
    });
    expect(tight.gradientCheckpointing).toBe(true);
    expect(tight.fits).toBe(true);
    expect(tight.maxMicroBatchTokens.kept).toBeLessThan(2048);
    expect(tight.maxMicroBatchTokens.recomputed).toBeGreaterThan(2048);
    expect(tight.parts.activations).toBeLessThan(roomy.parts.activations / 10);
  });

  it('names settings that would fit when full fine-tuning does not', () => {
    const plan = planMemory(QWEN_05B, { memoryLimitBytes: 6 * GiB });
    expect(plan.fits).toBe(false);
    expect(plan.fitsWith).toContain("lora: { r: 16, targetModules: 'all-linear' }");
  });
});

describe('MemoryLimitError before any work', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
  });
  const config = parseLlamaConfig({
    hidden_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 128,
    vocab_size: 32,
    max_position_embeddings: 4096,
  });

  it('createPolicyTrainer refuses a model whose state cannot fit, naming the parts and what would fit', async () => {
    const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1 }), {
      engine: 'native',
    });
    // the runtime alone is ~300 MB: a 200 MB limit cannot hold anything
    const refusal = createPolicyTrainer(model, { memoryLimitBytes: 200 * 2 ** 20 });
    await expect(refusal).rejects.toSatisfy(
      (error: unknown) =>
        MemoryLimitError.isInstance(error) &&
        error.code === 'MEMORY_LIMIT' &&
        /weights .* GiB, gradients .* GiB, optimizer/.test(error.message) &&
        error.limitBytes === 200 * 2 ** 20,
    );
    model.dispose();
  });

  it('a micro-batch over the limit is refused before its forward; the weights are untouched', async () => {
    const checkpoint = createRandomCheckpoint(config, { seed: 2 });
    const model = await createLlamaModel(checkpoint, { engine: 'native' });
    const trainer = await createPolicyTrainer(model, {
      memoryLimitBytes: 330 * 2 ** 20,
      microBatchTokens: 4096,
      gradientCheckpointing: false,
    });
    const long = { promptIds: [1], completionIds: Array.from({ length: 4000 }, (_, i) => i % 32) };
    expect(() => trainer.sftStep([long])).toThrow(
      /a micro-batch of 1 × 4000 tokens needs about .* GiB .* it would fit with .*memoryLimitBytes ≥ [0-9]+ MiB/,
    );
    expect(trainer.step).toBe(0);
    const after = new Map(model.toCheckpoint().tensors.map((t) => [t.name, t.data]));
    for (const tensor of checkpoint.tensors) expect(after.get(tensor.name)).toEqual(tensor.data);
    trainer.dispose();
    model.dispose();
  });
});
