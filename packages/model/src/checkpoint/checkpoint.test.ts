import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError, ShapeMismatchError } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../config/llama-config.js';
import { ModelLoadError } from '../errors/model-load-error.js';
import { exportOnnx } from '../onnx/export-onnx.js';
import {
  bfloat16BitsToFloat32,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from '../safetensors/float16.js';
import { encodeSafetensors } from '../safetensors/safetensors.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';
import { getTensor, validateCheckpoint } from './checkpoint.js';
import { loadCheckpoint, saveCheckpoint } from './checkpoint-io.js';
import { createRandomCheckpoint } from './random-init.js';
import { llamaTensorNames, llamaTensorSpecs } from './tensor-names.js';

const config = parseLlamaConfig({
  hidden_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 24,
  vocab_size: 11,
  tie_word_embeddings: false,
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-checkpoint-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('llamaTensorSpecs', () => {
  it('lists Hugging Face names and [out, in] shapes', () => {
    const specs = llamaTensorSpecs(config);
    expect(specs.slice(0, 10)).toEqual([
      { name: 'model.embed_tokens.weight', shape: [11, 16] },
      { name: 'model.layers.0.self_attn.q_proj.weight', shape: [16, 16] },
      { name: 'model.layers.0.self_attn.k_proj.weight', shape: [8, 16] },
      { name: 'model.layers.0.self_attn.v_proj.weight', shape: [8, 16] },
      { name: 'model.layers.0.self_attn.o_proj.weight', shape: [16, 16] },
      { name: 'model.layers.0.mlp.gate_proj.weight', shape: [24, 16] },
      { name: 'model.layers.0.mlp.up_proj.weight', shape: [24, 16] },
      { name: 'model.layers.0.mlp.down_proj.weight', shape: [16, 24] },
      { name: 'model.layers.0.input_layernorm.weight', shape: [16] },
      { name: 'model.layers.0.post_attention_layernorm.weight', shape: [16] },
    ]);
    expect(specs.at(-1)).toEqual({ name: 'lm_head.weight', shape: [11, 16] });
    expect(llamaTensorNames({ ...config, tie_word_embeddings: true })).not.toContain(
      'lm_head.weight',
    );
    const qwen = parseLlamaConfig({
      ...config,
      model_type: 'qwen2',
      architectures: undefined,
      attention_bias: undefined,
    });
    expect(llamaTensorNames(qwen)).toContain('model.layers.1.self_attn.v_proj.bias');
    expect(llamaTensorNames(qwen)).not.toContain('model.layers.1.self_attn.o_proj.bias');
  });
});

describe('createRandomCheckpoint', () => {
  it('is deterministic per seed, N(0, std²) for matrices, ones for norms', () => {
    const a = createRandomCheckpoint(config, { seed: 5 });
    const b = createRandomCheckpoint(config, { seed: 5 });
    const c = createRandomCheckpoint(config, { seed: 6 });
    expect(a).toEqual(b);
    expect(getTensor(a, 'lm_head.weight').data).not.toEqual(getTensor(c, 'lm_head.weight').data);
    expect([...getTensor(a, 'model.norm.weight').data]).toEqual(new Array(16).fill(1));
    const big = createRandomCheckpoint(parseLlamaConfig({ ...config, vocab_size: 4000 }), {
      seed: 1,
      std: 0.5,
    });
    const data = getTensor(big, 'model.embed_tokens.weight').data;
    const mean = data.reduce((sum, value) => sum + value, 0) / data.length;
    const variance = data.reduce((sum, value) => sum + (value - mean) ** 2, 0) / data.length;
    // 64000 draws: the sample std is within a few percent of 0.5 and the mean near 0.
    expect(Math.abs(mean)).toBeLessThan(0.01);
    expect(Math.abs(Math.sqrt(variance) - 0.5)).toBeLessThan(0.01);
    expect(validateCheckpoint(a, { functionName: 'test' }).config).toEqual(config);
  });

  it('does not change a layer when another layer is added', () => {
    const two = createRandomCheckpoint(config, { seed: 9 });
    const three = createRandomCheckpoint({ ...config, num_hidden_layers: 3 }, { seed: 9 });
    const name = 'model.layers.1.mlp.up_proj.weight';
    expect(getTensor(three, name).data).toEqual(getTensor(two, name).data);
  });

  it('validates its input', () => {
    expect(() => createRandomCheckpoint(config, {} as { seed: number })).toThrow(/options\.seed/);
    expect(() => createRandomCheckpoint(config, { seed: 1, std: -1 })).toThrow(/options\.std/);
    expect(() => getTensor(createRandomCheckpoint(config, { seed: 1 }), 'nope')).toThrow(
      /parameter 'name' of getTensor/,
    );
  });
});

describe('validateCheckpoint', () => {
  const checkpoint = createRandomCheckpoint(config, { seed: 1 });
  it('names a missing, misshapen, non-finite or unexpected tensor', () => {
    const without = { ...checkpoint, tensors: checkpoint.tensors.slice(1) };
    expect(() => validateCheckpoint(without, { functionName: 'f' })).toThrow(
      /model\.embed_tokens\.weight/,
    );
    const misshapen = {
      ...checkpoint,
      tensors: checkpoint.tensors.map((tensor) =>
        tensor.name === 'model.norm.weight' ? { ...tensor, shape: [4, 4] } : tensor,
      ),
    };
    expect(() => validateCheckpoint(misshapen, { functionName: 'f' })).toThrow(ShapeMismatchError);
    const nan = structuredClone(checkpoint);
    (getTensor(nan, 'model.norm.weight').data as Float32Array)[3] = Number.NaN;
    expect(() => validateCheckpoint(nan, { functionName: 'f' })).toThrow(
      /model\.norm\.weight'\]\.data\[3\]/,
    );
    const extra = {
      ...checkpoint,
      tensors: [
        ...checkpoint.tensors,
        { name: 'model.extra', shape: [1], data: new Float32Array(1) },
      ],
    };
    expect(() => validateCheckpoint(extra, { functionName: 'f' })).toThrow(/model\.extra/);
    let caught: unknown;
    try {
      validateCheckpoint(
        { ...checkpoint, config: { ...config, hidden_size: -1 } },
        { functionName: 'f' },
      );
    } catch (error) {
      caught = error;
    }
    expect(InvalidArgumentError.isInstance(caught)).toBe(true);
    expect((caught as InvalidArgumentError).parameter).toBe('checkpoint.config.hidden_size');
  });
});

describe('saveCheckpoint / loadCheckpoint', () => {
  const checkpoint = {
    ...createRandomCheckpoint(config, { seed: 2, perturbStd: 0.1 }),
    tokenizer: buildCharTokenizer({ characters: 'abcdefg' }),
    generationConfig: { bos_token_id: 1, eos_token_id: 2, do_sample: true, temperature: 0.7 },
  };

  it('round-trips a checkpoint exactly in F32 with its tokenizer and generation config', async () => {
    const target = join(dir, 'round-trip');
    await saveCheckpoint(target, checkpoint);
    expect((await readdir(target)).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const configJson = JSON.parse(await readFile(join(target, 'config.json'), 'utf8'));
    expect(configJson).toMatchObject({
      model_type: 'llama',
      hidden_size: 16,
      torch_dtype: 'float32',
    });
    const loaded = await loadCheckpoint(target);
    expect(loaded.config).toEqual(checkpoint.config);
    expect(loaded.tokenizer).toEqual(checkpoint.tokenizer);
    expect(loaded.generationConfig).toEqual(checkpoint.generationConfig);
    const byName = new Map(loaded.tensors.map((tensor) => [tensor.name, tensor]));
    for (const tensor of checkpoint.tensors) expect(byName.get(tensor.name)).toEqual(tensor);
    const weightsOnly = await loadCheckpoint(target, { weightsOnly: true });
    expect(weightsOnly.tokenizer).toBeUndefined();
  });

  it('writes shards with an index and BF16, replaces an existing checkpoint and leaves no temp files', async () => {
    const target = join(dir, 'sharded');
    await saveCheckpoint(target, checkpoint, { dtype: 'F32', onnx: true });
    await saveCheckpoint(target, checkpoint, { dtype: 'BF16', maxShardBytes: 1000 });
    const files = (await readdir(target)).sort();
    expect(files).not.toContain('model.safetensors'); // the old checkpoint's own files are replaced
    expect(files).not.toContain('onnx');
    expect(files).toContain('model.safetensors.index.json');
    const shards = files.filter((file) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(file));
    expect(shards.length).toBeGreaterThan(2);
    const index = JSON.parse(await readFile(join(target, 'model.safetensors.index.json'), 'utf8'));
    expect(Object.keys(index.weight_map).sort()).toEqual(llamaTensorNames(config).sort());
    expect((await readdir(dir)).filter((name) => name.startsWith('.'))).toEqual([]);
    const loaded = await loadCheckpoint(target);
    for (const tensor of checkpoint.tensors) {
      const data = getTensor(loaded, tensor.name).data;
      data.forEach((value, offset) => {
        expect(value).toBe(
          bfloat16BitsToFloat32(float32ToBfloat16Bits(tensor.data[offset] as number)),
        );
      });
    }
  });

  it('writes onnx/model.onnx when asked', async () => {
    const target = join(dir, 'with-onnx');
    await saveCheckpoint(target, checkpoint, { onnx: true });
    expect(new Uint8Array(await readFile(join(target, 'onnx', 'model.onnx')))).toEqual(
      exportOnnx(checkpoint),
    );
  });

  it('loads a Hugging Face-layout folder: F16 + BF16 shards, tied lm_head copy, inv_freq buffers', async () => {
    const hf = parseLlamaConfig({
      ...config,
      model_type: 'qwen2',
      architectures: undefined,
      attention_bias: undefined,
      tie_word_embeddings: true,
    });
    const source = createRandomCheckpoint(hf, { seed: 4, perturbStd: 0.3 });
    const target = join(dir, 'hf-layout');
    await mkdir(target);
    // As written by transformers: extra config fields, shuffled tensor order, mixed dtypes.
    await writeFile(
      join(target, 'config.json'),
      JSON.stringify({
        ...hf,
        torch_dtype: 'bfloat16',
        use_sliding_window: false,
        sliding_window: 4096,
        transformers_version: '4.44.0',
      }),
    );
    const names = llamaTensorNames(hf);
    const first = source.tensors.filter((tensor) => names.indexOf(tensor.name) % 2 === 0).reverse();
    const second = [
      ...source.tensors.filter((tensor) => names.indexOf(tensor.name) % 2 === 1),
      {
        name: 'lm_head.weight',
        shape: [11, 16],
        data: getTensor(source, 'model.embed_tokens.weight').data,
      },
      {
        name: 'model.layers.0.self_attn.rotary_emb.inv_freq',
        shape: [2],
        data: new Float32Array([1, 0.1]),
      },
    ];
    await writeFile(
      join(target, 'model-00001-of-00002.safetensors'),
      encodeSafetensors(first, { dtype: 'F16' }),
    );
    await writeFile(
      join(target, 'model-00002-of-00002.safetensors'),
      encodeSafetensors(second, { dtype: 'BF16' }),
    );
    const weightMap: Record<string, string> = {};
    for (const tensor of first) weightMap[tensor.name] = 'model-00001-of-00002.safetensors';
    for (const tensor of second) weightMap[tensor.name] = 'model-00002-of-00002.safetensors';
    await writeFile(
      join(target, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: 1234 }, weight_map: weightMap }),
    );
    const loaded = await loadCheckpoint(target);
    expect(loaded.config).toEqual(hf);
    expect(loaded.tokenizer).toBeUndefined();
    expect(loaded.tensors.map((tensor) => tensor.name).sort()).toEqual([...names].sort());
    for (const tensor of first) {
      getTensor(loaded, tensor.name).data.forEach((value, offset) => {
        expect(value).toBe(
          float16BitsToFloat32(float32ToFloat16Bits(tensor.data[offset] as number)),
        );
      });
    }
    for (const tensor of second.slice(0, -2)) {
      getTensor(loaded, tensor.name).data.forEach((value, offset) => {
        expect(value).toBe(
          bfloat16BitsToFloat32(float32ToBfloat16Bits(tensor.data[offset] as number)),
        );
      });
    }
  });

  it('fails with typed errors naming the file', async () => {
    const target = join(dir, 'broken');
    await saveCheckpoint(target, checkpoint);
    const expectLoadError = async (pattern: RegExp): Promise<void> => {
      await expect(loadCheckpoint(target)).rejects.toSatisfy(
        (error: unknown) =>
          ModelLoadError.isInstance(error) && pattern.test((error as Error).message),
      );
    };
    const weights = await readFile(join(target, 'model.safetensors'));
    await writeFile(join(target, 'model.safetensors'), weights.subarray(0, weights.length - 10));
    await expectLoadError(/model\.safetensors.*truncated/);
    await rm(join(target, 'model.safetensors'));
    await expectLoadError(/no model\.safetensors or model\.safetensors\.index\.json/);
    await writeFile(
      join(target, 'model.safetensors'),
      encodeSafetensors(checkpoint.tensors.filter((tensor) => tensor.name !== 'model.norm.weight')),
    );
    await expectLoadError(/do not match config\.json.*model\.norm\.weight/);
    await writeFile(join(target, 'config.json'), '{"hidden_size": 16');
    await expectLoadError(/config\.json.*not valid JSON/);
    await writeFile(
      join(target, 'config.json'),
      JSON.stringify({ ...config, num_attention_heads: 3 }),
    );
    await expectLoadError(/config\.json.*num_attention_heads|hidden_size/);
    await rm(join(target, 'config.json'));
    await expectLoadError(/config\.json.*ENOENT/);
    await expect(loadCheckpoint(join(dir, 'nothing-here'))).rejects.toThrow(ModelLoadError);
  });

  it('rejects an escaping shard name in the index', async () => {
    const target = join(dir, 'escaping');
    await saveCheckpoint(target, checkpoint, { maxShardBytes: 2000 });
    await writeFile(
      join(target, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { 'model.norm.weight': '../x.safetensors' } }),
    );
    await expect(loadCheckpoint(target)).rejects.toThrow(/not a plain file name/);
  });

  it('never deletes a user file when it replaces a checkpoint folder', async () => {
    const target = join(dir, 'with-user-files');
    await saveCheckpoint(target, checkpoint, { onnx: true });
    await writeFile(join(target, 'NOTES.md'), 'my notes');
    await writeFile(join(target, 'onnx', 'model_quantized.onnx'), 'mine too');
    await mkdir(join(target, 'eval'));
    await writeFile(join(target, 'eval', 'results.json'), '{"pass@1": 0.5}');
    await saveCheckpoint(target, checkpoint, { dtype: 'BF16', maxShardBytes: 1000 });
    expect(await readFile(join(target, 'NOTES.md'), 'utf8')).toBe('my notes');
    expect(await readFile(join(target, 'onnx', 'model_quantized.onnx'), 'utf8')).toBe('mine too');
    expect(await readFile(join(target, 'eval', 'results.json'), 'utf8')).toBe('{"pass@1": 0.5}');
    const files = await readdir(target);
    expect(files).not.toContain('model.safetensors'); // the checkpoint's own files were replaced
    expect(await readdir(join(target, 'onnx'))).toEqual(['model_quantized.onnx']);
    expect((await loadCheckpoint(target)).config).toEqual(checkpoint.config);
    expect((await readdir(dir)).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('refuses a file or a non-empty folder that is not a checkpoint, writing nothing', async () => {
    const foreign = join(dir, 'my-project');
    await mkdir(foreign);
    await writeFile(join(foreign, 'data.jsonl'), '{"a":1}\n');
    await writeFile(join(foreign, 'config.json'), '{"run":"not a model"}'); // no weights
    const before = (await readdir(dir)).sort();
    const error = await saveCheckpoint(foreign, checkpoint).catch((caught: unknown) => caught);
    expect(OverwriteRefusedError.isInstance(error)).toBe(true);
    expect((error as OverwriteRefusedError).code).toBe('WOULD_OVERWRITE');
    expect((error as Error).message).toMatch(/my-project.*not a checkpoint/);
    expect((await readdir(foreign)).sort()).toEqual(['config.json', 'data.jsonl']);
    expect(await readFile(join(foreign, 'config.json'), 'utf8')).toBe('{"run":"not a model"}');
    expect((await readdir(dir)).sort()).toEqual(before); // no temporary folder either
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    await expect(saveCheckpoint(file, checkpoint)).rejects.toSatisfy(
      OverwriteRefusedError.isInstance,
    );
    expect(await readFile(file, 'utf8')).toBe('x');
    // an empty folder is fine
    const empty = join(dir, 'empty');
    await mkdir(empty);
    await saveCheckpoint(empty, checkpoint);
    expect((await loadCheckpoint(empty)).config).toEqual(checkpoint.config);
  });

  it('rejects unknown options, nested ones included', async () => {
    const target = join(dir, 'options');
    await expect(saveCheckpoint(target, checkpoint, { dtypes: 'BF16' } as never)).rejects.toThrow(
      /options\.dtypes.*did you mean 'dtype'/,
    );
    await expect(
      saveCheckpoint(target, checkpoint, { onnx: { doc_string: 'x' } } as never),
    ).rejects.toThrow(/options\.onnx\.doc_string.*did you mean 'docString'/);
    await expect(loadCheckpoint(target, { weights_only: true } as never)).rejects.toThrow(
      /options\.weights_only.*did you mean 'weightsOnly'/,
    );
    await expect(readdir(target)).rejects.toThrow();
  });

  it('validates the checkpoint before touching the disk', async () => {
    const target = join(dir, 'never');
    await expect(
      saveCheckpoint(target, { ...checkpoint, tensors: checkpoint.tensors.slice(2) }),
    ).rejects.toThrow(InvalidArgumentError);
    await expect(readdir(target)).rejects.toThrow();
    await expect(saveCheckpoint(target, checkpoint, { maxShardBytes: 0 })).rejects.toThrow(
      /options\.maxShardBytes/,
    );
  });
});
