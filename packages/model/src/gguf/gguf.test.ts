import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { type LlamaConfigInput, parseLlamaConfig } from '../config/llama-config.js';
import { ModelLoadError } from '../errors/model-load-error.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../safetensors/float16.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';
import { exportGguf, permuteRotaryRows, writeGgufModel } from './export-gguf.js';
import { encodeGguf } from './gguf-encode.js';
import { GgmlType, GgufTokenType, GgufValueType } from './gguf-format.js';
import { type GgufFile, parseGguf, readGguf } from './gguf-reader.js';

const files = buildCharTokenizer({ characters: 'ab é', chatTemplate: '{{ messages }}' });
const BASE = {
  hidden_size: 32,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 64,
  vocab_size: 10, // 4 specials + 4 characters + 2 unused ids
  eos_token_id: 2,
};

function makeCheckpoint(overrides: Partial<LlamaConfigInput> = {}, seed = 1): Checkpoint {
  const config = parseLlamaConfig({ ...BASE, ...overrides });
  const random = createRandomCheckpoint(config, { seed, perturbStd: 0.1 });
  return { ...random, tokenizer: files };
}

function original(checkpoint: Checkpoint, name: string): Float32Array {
  return (checkpoint.tensors.find((tensor) => tensor.name === name) as { data: Float32Array }).data;
}

function loadError(run: () => unknown): ModelLoadError {
  try {
    run();
  } catch (error) {
    if (ModelLoadError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ModelLoadError');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-gguf-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('permuteRotaryRows', () => {
  it('interleaves the two halves of each head (llama.cpp LlamaModel.permute), hand-worked', () => {
    // 2 heads of width 4, 2 columns: rows [a0 a1 b0 b1 | c0 c1 d0 d1] → [a0 b0 a1 b1 | c0 d0 c1 d1].
    const rows = Float32Array.from({ length: 16 }, (_, index) => index);
    const out = permuteRotaryRows(rows, 2, 4, 2);
    expect([...out]).toEqual([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]);
  });
});

describe('writeGgufModel + readGguf', () => {
  it('round-trips f32: GGUF v3, llama metadata (u32 ints, f32 floats), dims innermost first, aligned data', async () => {
    const checkpoint = makeCheckpoint({ attention_bias: true, rope_theta: 5e5, head_dim: 16 });
    const path = await writeGgufModel(join(dir, 'f32'), checkpoint);
    expect(path).toBe(join(dir, 'f32', 'model.gguf'));
    const gguf = await readGguf(path);
    expect(gguf.version).toBe(3);
    const m = gguf.metadata;
    expect(m['general.architecture']).toBe('llama');
    expect(m['general.file_type']).toBe(0);
    expect(m['llama.block_count']).toBe(1);
    expect(m['llama.attention.head_count_kv']).toBe(2);
    expect(m['llama.attention.key_length']).toBe(16);
    expect(m['llama.rope.dimension_count']).toBe(16);
    expect(m['llama.rope.freq_base']).toBe(5e5);
    expect(m['llama.attention.layer_norm_rms_epsilon']).toBe(Math.fround(1e-6));
    expect(gguf.metadataTypes['llama.block_count']).toBe(GgufValueType.UINT32);
    expect(gguf.metadataTypes['llama.rope.freq_base']).toBe(GgufValueType.FLOAT32);
    expect(gguf.metadataTypes['tokenizer.ggml.eos_token_id']).toBe(GgufValueType.UINT32);
    expect(gguf.dataOffset % 32).toBe(0);
    for (const tensor of gguf.tensors) expect(tensor.offset % 32, tensor.name).toBe(0);
    const q = gguf.tensors.find((tensor) => tensor.name === 'blk.0.attn_q.weight');
    expect(q).toMatchObject({ dims: [32, 64], shape: [64, 32], typeName: 'F32' });
    expect(gguf.tensors.map((tensor) => tensor.name)).toContain('blk.0.attn_output.bias');
    expect(gguf.tensors.map((tensor) => tensor.name)).toContain('output.weight');
    expect(gguf.readTensor('blk.0.ffn_down.weight')).toEqual(
      original(checkpoint, 'model.layers.0.mlp.down_proj.weight'),
    );
    const prefix = 'model.layers.0.self_attn';
    expect(gguf.readTensor('blk.0.attn_q.weight')).toEqual(
      permuteRotaryRows(original(checkpoint, `${prefix}.q_proj.weight`), 4, 16, 32),
    );
    expect(gguf.readTensor('blk.0.attn_k.bias')).toEqual(
      permuteRotaryRows(original(checkpoint, `${prefix}.k_proj.bias`), 2, 16, 1),
    );
    expect(gguf.readTensor('blk.0.attn_v.bias')).toEqual(
      original(checkpoint, `${prefix}.v_proj.bias`),
    );
  });

  it('qwen2: no permutation, tied embeddings write no output.weight', () => {
    const checkpoint = makeCheckpoint({ model_type: 'qwen2', tie_word_embeddings: true });
    const gguf = parseGguf(exportGguf(checkpoint));
    expect(gguf.metadata['general.architecture']).toBe('qwen2');
    expect(gguf.metadata['qwen2.embedding_length']).toBe(32);
    expect(gguf.tensors.map((tensor) => tensor.name)).not.toContain('output.weight');
    expect(gguf.readTensor('blk.0.attn_q.weight')).toEqual(
      original(checkpoint, 'model.layers.0.self_attn.q_proj.weight'),
    );
    expect(gguf.readTensor('blk.0.attn_q.bias')).toEqual(
      original(checkpoint, 'model.layers.0.self_attn.q_proj.bias'),
    );
  });

  it('f16 and bf16 store correctly rounded values; q8_0 is within half a step per block; norms stay F32', () => {
    const checkpoint = makeCheckpoint();
    const embedding = original(checkpoint, 'model.embed_tokens.weight');
    const f16 = parseGguf(exportGguf(checkpoint, { dtype: 'f16' }));
    expect(f16.metadata['general.file_type']).toBe(1);
    expect(f16.tensors.find((t) => t.name === 'token_embd.weight')?.typeName).toBe('F16');
    expect(f16.tensors.find((t) => t.name === 'output_norm.weight')?.typeName).toBe('F32');
    expect(f16.readTensor('token_embd.weight')).toEqual(
      Float32Array.from(embedding, (x) => float16BitsToFloat32(float32ToFloat16Bits(x))),
    );
    const bf16 = parseGguf(exportGguf(checkpoint, { dtype: 'bf16' }));
    expect(bf16.metadata['general.file_type']).toBe(32);
    const bfValues = bf16.readTensor('token_embd.weight');
    for (const [index, x] of embedding.entries()) {
      expect(Math.abs((bfValues[index] as number) - x)).toBeLessThanOrEqual(Math.abs(x) * 2 ** -8);
    }
    const q8 = parseGguf(exportGguf(checkpoint, { dtype: 'q8_0' }));
    expect(q8.metadata['general.file_type']).toBe(7);
    const info = q8.tensors.find((t) => t.name === 'token_embd.weight');
    expect(info).toMatchObject({ typeName: 'Q8_0', byteLength: (embedding.length / 32) * 34 });
    const q8Values = q8.readTensor('token_embd.weight');
    for (let block = 0; block < embedding.length / 32; block++) {
      const values = embedding.subarray(block * 32, block * 32 + 32);
      const step = Math.max(...values.map(Math.abs)) / 127;
      for (let index = 0; index < 32; index++) {
        const error = Math.abs(
          (q8Values[block * 32 + index] as number) - (values[index] as number),
        );
        expect(error).toBeLessThanOrEqual(step * 0.502 + 1e-7);
      }
    }
  });

  it('q8_0 writes matrices whose rows are not a multiple of 32 long as F16', () => {
    const checkpoint = makeCheckpoint({
      hidden_size: 48,
      num_attention_heads: 4,
      intermediate_size: 64,
    });
    const gguf = parseGguf(exportGguf(checkpoint, { dtype: 'q8_0' }));
    const type = (name: string) => gguf.tensors.find((t) => t.name === name)?.typeName;
    expect(type('blk.0.ffn_gate.weight')).toBe('F16'); // rows of 48
    expect(type('blk.0.ffn_down.weight')).toBe('Q8_0'); // rows of 64
  });

  it('tokenizer metadata: exactly vocab_size distinct gpt2 tokens with byte-level text, types, merges, ids, template', () => {
    const generationConfig = { eos_token_id: [2, 1] };
    const gguf = parseGguf(exportGguf({ ...makeCheckpoint(), generationConfig }));
    const m = gguf.metadata;
    const tokens = m['tokenizer.ggml.tokens'] as string[];
    expect(m['tokenizer.ggml.model']).toBe('gpt2');
    expect(tokens).toEqual([
      '<pad>',
      '<bos>',
      '<eos>',
      '<unk>',
      'a',
      'b',
      'Ġ',
      'Ã©',
      '[PAD8]',
      '[PAD9]',
    ]);
    expect(m['tokenizer.ggml.token_type']).toEqual([3, 3, 3, 3, 1, 1, 1, 1, 5, 5].map(Number));
    expect(m['tokenizer.ggml.token_type']).toContain(GgufTokenType.UNUSED);
    expect(m['tokenizer.ggml.merges']).toEqual(['Ã ©']);
    expect(m['tokenizer.ggml.bos_token_id']).toBe(1);
    expect(m['tokenizer.ggml.eos_token_id']).toBe(2);
    expect(m['tokenizer.ggml.eot_token_id']).toBe(1);
    expect(m['tokenizer.ggml.unknown_token_id']).toBe(3);
    expect(m['tokenizer.ggml.padding_token_id']).toBe(0);
    expect(m['tokenizer.ggml.add_bos_token']).toBe(false);
    expect(m['tokenizer.chat_template']).toBe('{{ messages }}');
  });
});

describe('writeGgufModel / exportGguf validation', () => {
  it('refuses to overwrite model.gguf unless overwrite: true', async () => {
    const target = join(dir, 'overwrite');
    const path = await writeGgufModel(target, makeCheckpoint({}, 1));
    const before = await readFile(path);
    const error = await writeGgufModel(target, makeCheckpoint({}, 2)).catch((caught) => caught);
    expect(OverwriteRefusedError.isInstance(error)).toBe(true);
    expect(error.code).toBe('WOULD_OVERWRITE');
    expect(await readFile(path)).toEqual(before);
    await writeGgufModel(target, makeCheckpoint({}, 2), { overwrite: true });
    expect(await readFile(path)).not.toEqual(before);
  });

  it('rejects unknown option keys, bad dtypes, a missing tokenizer and qwen2 head_dim ≠ hidden/heads', async () => {
    const checkpoint = makeCheckpoint();
    const unknown = await writeGgufModel(join(dir, 'x'), checkpoint, {
      dtpye: 'f16',
    } as never).catch((caught) => caught);
    expect(unknown.code).toBe('UNKNOWN_OPTION');
    expect(unknown.message).toContain("'dtype'");
    expect(() => exportGguf(checkpoint, { overwrite: true } as never)).toThrow(/overwrite/);
    expect(() => exportGguf(checkpoint, { dtype: 'q4_0' as never })).toThrow(InvalidArgumentError);
    expect(() => exportGguf({ ...checkpoint, tokenizer: undefined })).toThrow(
      /checkpoint\.tokenizer/,
    );
    expect(() =>
      exportGguf({ ...checkpoint, config: { ...checkpoint.config, vocab_size: 5 } }),
    ).toThrow();
    const qwen = makeCheckpoint({ model_type: 'qwen2', head_dim: 16 });
    expect(() => exportGguf(qwen)).toThrow(/head_dim/);
    await expect(readFile(join(dir, 'x', 'model.gguf'))).rejects.toThrow();
  });
});

describe('readGguf / parseGguf errors', () => {
  const bytes = exportGguf(makeCheckpoint());

  it('bad magic, unsupported version, missing file', async () => {
    const bad = bytes.slice();
    bad[0] = 0x47 ^ 1;
    expect(loadError(() => parseGguf(bad, 'bad.gguf')).message).toMatch(
      /bad\.gguf.*not a GGUF file/,
    );
    const version = bytes.slice();
    new DataView(version.buffer).setUint32(4, 4, true);
    expect(loadError(() => parseGguf(version)).message).toMatch(/unsupported GGUF version 4/);
    const missing = await readGguf(join(dir, 'nope.gguf')).catch((caught) => caught);
    expect(ModelLoadError.isInstance(missing)).toBe(true);
  });

  it('a file cut anywhere is a truncation error, never a crash', () => {
    const gguf = parseGguf(bytes);
    const end = gguf.tensors.at(-1) as { offset: number; byteLength: number };
    for (let cut = 0; cut < end.offset + end.byteLength; cut += 97) {
      expect(loadError(() => parseGguf(bytes.subarray(0, cut))).message, `cut ${cut}`).toMatch(
        /truncated|not a GGUF/,
      );
    }
  });

  it('unknown tensor types fail to parse; known but undecodable ones fail in readTensor', () => {
    const tensor = (type: number) => ({ name: 't', dims: [32], type, bytes: new Uint8Array(18) });
    expect(loadError(() => parseGguf(encodeGguf([], [tensor(99)]))).message).toMatch(
      /unsupported ggml type 99/,
    );
    const q4: GgufFile = parseGguf(encodeGguf([], [tensor(GgmlType.Q4_0)]));
    expect(q4.tensors[0]?.typeName).toBe('Q4_0');
    expect(loadError(() => q4.readTensor('t')).message).toMatch(/Q4_0/);
    expect(() => q4.readTensor('u')).toThrow(InvalidArgumentError);
  });

  it('reads what writeFile put on disk (path named in errors)', async () => {
    const path = join(dir, 'cut.gguf');
    await writeFile(path, bytes.subarray(0, 100));
    const error = await readGguf(path).catch((caught) => caught);
    expect(ModelLoadError.isInstance(error)).toBe(true);
    expect(error.path).toBe(path);
  });
});
