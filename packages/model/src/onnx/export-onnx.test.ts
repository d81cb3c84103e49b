import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OverwriteRefusedError } from '@rlvr/core';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { saveCheckpoint } from '../checkpoint/checkpoint-io.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { type LlamaConfig, parseLlamaConfig } from '../config/llama-config.js';
import {
  defaultPositionIds,
  type KeyValue,
  referenceForward,
} from '../reference/reference-forward.js';
import { exportOnnx, onnxIoNames, writeOnnxModel } from './export-onnx.js';

const TOLERANCE = 1e-4;

function tinyConfig(overrides: Partial<LlamaConfig> & Record<string, unknown> = {}): LlamaConfig {
  return parseLlamaConfig({
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: 23,
    rope_theta: 10000,
    rms_norm_eps: 1e-5,
    ...overrides,
  });
}

type OrtFeeds = Record<string, ort.Tensor>;

function int64Tensor(rows: number[][]): ort.Tensor {
  const data = BigInt64Array.from(rows.flat().map((value) => BigInt(value)));
  return new ort.Tensor('int64', data, [rows.length, (rows[0] as number[]).length]);
}

function emptyCache(config: LlamaConfig, batch: number): OrtFeeds {
  const feeds: OrtFeeds = {};
  const dims = [batch, config.num_key_value_heads, 0, config.head_dim];
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    feeds[`past_key_values.${layer}.key`] = new ort.Tensor('float32', new Float32Array(0), dims);
    feeds[`past_key_values.${layer}.value`] = new ort.Tensor('float32', new Float32Array(0), dims);
  }
  return feeds;
}

async function run(
  session: ort.InferenceSession,
  config: LlamaConfig,
  inputIds: number[][],
  attentionMask: number[][],
  past?: OrtFeeds,
): Promise<{ logits: Float32Array; present: OrtFeeds }> {
  const feeds: OrtFeeds = {
    input_ids: int64Tensor(inputIds),
    attention_mask: int64Tensor(attentionMask),
    position_ids: int64Tensor(defaultPositionIds(attentionMask, (inputIds[0] as number[]).length)),
    ...(past ?? emptyCache(config, inputIds.length)),
  };
  const out = await session.run(feeds);
  const present: OrtFeeds = {};
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    for (const part of ['key', 'value']) {
      present[`past_key_values.${layer}.${part}`] = out[`present.${layer}.${part}`] as ort.Tensor;
    }
  }
  return { logits: (out.logits as ort.Tensor).data as Float32Array, present };
}

/** Max |a − b| over the query positions whose mask is 1 (padded queries have no defined logits). */
function maxDiffAtRealTokens(
  actual: Float32Array,
  expected: Float64Array,
  mask: number[][],
  sequence: number,
  vocab: number,
): number {
  let max = 0;
  for (const [b, row] of mask.entries()) {
    const offset = row.length - sequence;
    for (let s = 0; s < sequence; s++) {
      if (row[offset + s] === 0) continue;
      for (let v = 0; v < vocab; v++) {
        const index = (b * sequence + s) * vocab + v;
        max = Math.max(max, Math.abs((actual[index] as number) - (expected[index] as number)));
      }
    }
  }
  return max;
}

function cacheFromOrt(present: OrtFeeds, config: LlamaConfig): KeyValue[] {
  return Array.from({ length: config.num_hidden_layers }, (_, layer) => {
    const key = present[`past_key_values.${layer}.key`] as ort.Tensor;
    const value = present[`past_key_values.${layer}.value`] as ort.Tensor;
    return {
      key: { dims: [...key.dims], data: key.data as Float32Array },
      value: { dims: [...value.dims], data: value.data as Float32Array },
    };
  });
}

const variants: { name: string; config: LlamaConfig }[] = [
  { name: 'llama GQA untied', config: tinyConfig() },
  {
    name: 'llama MHA tied, explicit head_dim',
    config: tinyConfig({
      num_key_value_heads: 4,
      head_dim: 6,
      tie_word_embeddings: true,
      rope_theta: 500,
    }),
  },
  {
    name: 'llama attention_bias (q/k/v/o bias)',
    config: tinyConfig({ attention_bias: true, num_key_value_heads: 1 }),
  },
  {
    name: 'qwen2 (q/k/v bias) tied',
    config: tinyConfig({ model_type: 'qwen2', tie_word_embeddings: true, rope_theta: 1e6 }),
  },
];

describe.each(variants)('exportOnnx parity with referenceForward: $name', ({ config }) => {
  let checkpoint: Checkpoint;
  let session: ort.InferenceSession;

  beforeAll(async () => {
    checkpoint = createRandomCheckpoint(config, { seed: 7, std: 0.25, perturbStd: 0.2 });
    session = await ort.InferenceSession.create(exportOnnx(checkpoint), {
      graphOptimizationLevel: 'all',
      intraOpNumThreads: 1,
    });
  });
  afterAll(async () => {
    await session.release();
  });

  it('has Optimum I/O names', () => {
    const names = onnxIoNames(config);
    expect([...session.inputNames].sort()).toEqual([...names.inputs].sort());
    expect([...session.outputNames].sort()).toEqual([...names.outputs].sort());
  });

  it('matches without cache, unpadded', async () => {
    const inputIds = [
      [1, 5, 9, 2, 22, 0, 7],
      [3, 3, 4, 18, 11, 12, 6],
    ];
    const mask = inputIds.map((row) => row.map(() => 1));
    const { logits } = await run(session, config, inputIds, mask);
    const reference = referenceForward(checkpoint, { inputIds, attentionMask: mask });
    expect(reference.logits.dims).toEqual([2, 7, config.vocab_size]);
    const diff = maxDiffAtRealTokens(logits, reference.logits.data, mask, 7, config.vocab_size);
    expect(diff).toBeLessThan(TOLERANCE);
    // The logits are not trivially small, so the tolerance is meaningful.
    expect(Math.max(...reference.logits.data.map(Math.abs))).toBeGreaterThan(0.5);
  });

  it('matches with left padding and a KV cache over several decode steps', async () => {
    const prompts = [
      [0, 0, 0, 4, 8, 15],
      [9, 1, 2, 3, 5, 8],
      [0, 0, 0, 0, 0, 21],
    ];
    let mask = [
      [0, 0, 0, 1, 1, 1],
      [1, 1, 1, 1, 1, 1],
      [0, 0, 0, 0, 0, 1],
    ];
    const first = await run(session, config, prompts, mask);
    const firstReference = referenceForward(checkpoint, { inputIds: prompts, attentionMask: mask });
    expect(
      maxDiffAtRealTokens(first.logits, firstReference.logits.data, mask, 6, config.vocab_size),
    ).toBeLessThan(TOLERANCE);

    // Padding must not change the logits of the real tokens: compare with each row alone, unpadded.
    for (const [b, row] of prompts.entries()) {
      const real = row.filter((_, index) => (mask[b] as number[])[index] === 1);
      const alone = referenceForward(checkpoint, { inputIds: [real] });
      const last = alone.logits.data.subarray((real.length - 1) * config.vocab_size);
      const padded = firstReference.logits.data.subarray(
        (b * 6 + 5) * config.vocab_size,
        (b * 6 + 6) * config.vocab_size,
      );
      for (let v = 0; v < config.vocab_size; v++) {
        expect(Math.abs((padded[v] as number) - (last[v] as number))).toBeLessThan(1e-9);
      }
    }

    let past = first.present;
    let referencePast = firstReference.presentKeyValues as KeyValue[];
    const fullIds = prompts.map((row) => [...row]);
    for (const step of [
      [[3], [7], [19]],
      [
        [1, 2],
        [0, 11],
        [5, 5],
      ],
    ]) {
      mask = mask.map((row) => [...row, ...(step[0] as number[]).map(() => 1)]);
      step.forEach((tokens, b) => {
        (fullIds[b] as number[]).push(...tokens);
      });
      const length = (step[0] as number[]).length;
      const cached = await run(session, config, step, mask, past);
      const referenceCached = referenceForward(checkpoint, {
        inputIds: step,
        attentionMask: mask,
        pastKeyValues: referencePast,
      });
      expect(
        maxDiffAtRealTokens(
          cached.logits,
          referenceCached.logits.data,
          mask,
          length,
          config.vocab_size,
        ),
      ).toBeLessThan(TOLERANCE);
      // The ONNX cache fed to the reference gives the same logits too (the caches agree).
      const fromOrtCache = referenceForward(checkpoint, {
        inputIds: step,
        attentionMask: mask,
        pastKeyValues: cacheFromOrt(past, config),
      });
      expect(
        maxDiffAtRealTokens(
          cached.logits,
          fromOrtCache.logits.data,
          mask,
          length,
          config.vocab_size,
        ),
      ).toBeLessThan(TOLERANCE);
      // Cached decoding equals recomputing the whole padded sequence.
      const full = referenceForward(checkpoint, { inputIds: fullIds, attentionMask: mask });
      const total = (fullIds[0] as number[]).length;
      for (let b = 0; b < 3; b++) {
        for (let s = 0; s < length; s++) {
          for (let v = 0; v < config.vocab_size; v++) {
            const a = referenceCached.logits.data[
              (b * length + s) * config.vocab_size + v
            ] as number;
            const c = full.logits.data[
              (b * total + total - length + s) * config.vocab_size + v
            ] as number;
            expect(Math.abs(a - c)).toBeLessThan(1e-9);
          }
        }
      }
      past = cached.present;
      referencePast = referenceCached.presentKeyValues;
    }
  });
});

describe('exportOnnx', () => {
  it('produces no NaN on all-padding rows and is deterministic', async () => {
    const config = tinyConfig({ num_hidden_layers: 1 });
    const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.3 });
    const bytes = exportOnnx(checkpoint);
    expect(exportOnnx(checkpoint)).toEqual(bytes);
    const session = await ort.InferenceSession.create(bytes);
    const { logits } = await run(session, config, [[0, 0, 5]], [[0, 0, 1]]);
    expect(logits.every(Number.isFinite)).toBe(true);
    await session.release();
  });

  it('writes onnx/model.onnx into a folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-onnx-'));
    try {
      const checkpoint = createRandomCheckpoint(tinyConfig({ num_hidden_layers: 1 }), { seed: 1 });
      const path = await writeOnnxModel(dir, checkpoint);
      expect(path).toBe(join(dir, 'onnx', 'model.onnx'));
      expect(new Uint8Array(await readFile(path))).toEqual(exportOnnx(checkpoint));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('replaces onnx/model.onnx only in a checkpoint folder, never a foreign file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-onnx-'));
    try {
      const checkpoint = createRandomCheckpoint(tinyConfig({ num_hidden_layers: 1 }), { seed: 1 });
      const foreign = join(dir, 'other-tool');
      await mkdir(join(foreign, 'onnx'), { recursive: true });
      await writeFile(join(foreign, 'onnx', 'model.onnx'), 'not ours');
      const error = await writeOnnxModel(foreign, checkpoint).catch((caught: unknown) => caught);
      expect(OverwriteRefusedError.isInstance(error)).toBe(true);
      expect(await readFile(join(foreign, 'onnx', 'model.onnx'), 'utf8')).toBe('not ours');
      const own = join(dir, 'checkpoint');
      await saveCheckpoint(own, checkpoint, { onnx: true });
      const other = createRandomCheckpoint(tinyConfig({ num_hidden_layers: 1 }), { seed: 2 });
      await writeOnnxModel(own, other); // the checkpoint's own export: replaced
      expect(new Uint8Array(await readFile(join(own, 'onnx', 'model.onnx')))).toEqual(
        exportOnnx(other),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects an invalid checkpoint with a typed error naming the tensor', () => {
    const checkpoint = createRandomCheckpoint(tinyConfig({ num_hidden_layers: 1 }), { seed: 1 });
    const broken = {
      ...checkpoint,
      tensors: checkpoint.tensors.filter((tensor) => tensor.name !== 'model.norm.weight'),
    };
    expect(() => exportOnnx(broken)).toThrow(/model\.norm\.weight/);
    expect(() => exportOnnx(checkpoint, { docString: 5 as unknown as string })).toThrow(
      /options\.docString/,
    );
  });
});
