import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { parseLlamaConfig } from '../config/llama-config.js';
import { defaultPositionIds, referenceForward } from './reference-forward.js';

const eps = 1e-6;

/** hidden 2, one head of width 2, vocab 2: weights set by hand so the output can be worked out. */
function handModel(): Checkpoint {
  const config = parseLlamaConfig({
    hidden_size: 2,
    num_hidden_layers: 1,
    num_attention_heads: 1,
    intermediate_size: 1,
    vocab_size: 2,
    rms_norm_eps: eps,
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 0, std: 0 });
  const set = (name: string, values: number[]): void => {
    const tensor = checkpoint.tensors.find((item) => item.name === name);
    if (!tensor) throw new Error(name);
    tensor.data.set(values);
  };
  set('model.embed_tokens.weight', [1, 0, 0, 2]); // token 0 → [1, 0], token 1 → [0, 2]
  set('model.layers.0.self_attn.v_proj.weight', [1, 0, 0, 1]);
  set('model.layers.0.self_attn.o_proj.weight', [1, 0, 0, 1]);
  set('lm_head.weight', [1, 0, 0, 1]);
  return checkpoint;
}

function rmsNormalize(x: number[]): number[] {
  const scale = 1 / Math.sqrt(x.reduce((sum, value) => sum + value * value, 0) / x.length + eps);
  return x.map((value) => value * scale);
}

describe('referenceForward (hand-worked)', () => {
  it('with q = k = 0 each position averages the values of the visible keys', () => {
    const checkpoint = handModel();
    const { logits, presentKeyValues } = referenceForward(checkpoint, { inputIds: [[0, 1]] });
    const v0 = rmsNormalize([1, 0]);
    const v1 = rmsNormalize([0, 2]);
    const x0 = [1 + (v0[0] as number), 0 + (v0[1] as number)];
    const x1 = [
      0 + ((v0[0] as number) + (v1[0] as number)) / 2,
      2 + ((v0[1] as number) + (v1[1] as number)) / 2,
    ];
    const expected = [...rmsNormalize(x0), ...rmsNormalize(x1)];
    expect(logits.dims).toEqual([1, 2, 2]);
    [...logits.data].forEach((value, index) => {
      expect(value).toBeCloseTo(expected[index] as number, 12);
    });
    // Values are cached as computed (no RoPE on values); keys are 0.
    expect([...(presentKeyValues[0]?.value.data ?? [])]).toEqual([...v0, ...v1]);
    expect([...(presentKeyValues[0]?.key.data ?? [])]).toEqual([0, 0, 0, 0]);
  });

  it('a padded key is invisible', () => {
    const checkpoint = handModel();
    const { logits } = referenceForward(checkpoint, {
      inputIds: [[0, 1]],
      attentionMask: [[0, 1]],
    });
    const v1 = rmsNormalize([0, 2]);
    const x1 = [v1[0] as number, 2 + (v1[1] as number)];
    const expected = rmsNormalize(x1);
    expect(logits.data[2]).toBeCloseTo(expected[0] as number, 12);
    expect(logits.data[3]).toBeCloseTo(expected[1] as number, 12);
  });

  it('SwiGLU: gate·sigmoid(gate)·up through down_proj', () => {
    const checkpoint = handModel();
    const set = (name: string, values: number[]): void => {
      checkpoint.tensors.find((item) => item.name === name)?.data.set(values);
    };
    set('model.layers.0.self_attn.v_proj.weight', [0, 0, 0, 0]);
    set('model.layers.0.mlp.gate_proj.weight', [0.5, 0]);
    set('model.layers.0.mlp.up_proj.weight', [2, 0]);
    set('model.layers.0.mlp.down_proj.weight', [1, -1]);
    const { logits } = referenceForward(checkpoint, { inputIds: [[0]] });
    const n = rmsNormalize([1, 0]);
    const gate = 0.5 * (n[0] as number);
    const up = 2 * (n[0] as number);
    const act = (gate / (1 + Math.exp(-gate))) * up;
    const expected = rmsNormalize([1 + act, -act]);
    expect(logits.data[0]).toBeCloseTo(expected[0] as number, 12);
    expect(logits.data[1]).toBeCloseTo(expected[1] as number, 12);
  });

  it('computes Hugging Face default position ids for left padding', () => {
    expect(
      defaultPositionIds(
        [
          [0, 0, 1, 1, 1],
          [1, 1, 1, 1, 1],
        ],
        5,
      ),
    ).toEqual([
      [1, 1, 0, 1, 2],
      [0, 1, 2, 3, 4],
    ]);
    expect(defaultPositionIds([[0, 1, 1, 1]], 1)).toEqual([[2]]);
  });
});

describe('referenceForward (laws)', () => {
  const config = parseLlamaConfig({
    hidden_size: 16,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 20,
    vocab_size: 13,
    attention_bias: true,
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 21, std: 0.3, perturbStd: 0.2 });
  const ids = fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 6 });

  it('RoPE makes logits invariant to shifting all positions (property)', () => {
    fc.assert(
      fc.property(ids, fc.integer({ min: 1, max: 500 }), (tokens, shift) => {
        const base = referenceForward(checkpoint, { inputIds: [tokens] }).logits.data;
        const shifted = referenceForward(checkpoint, {
          inputIds: [tokens],
          positionIds: [tokens.map((_, index) => index + shift)],
        }).logits.data;
        base.forEach((value, index) => {
          expect(Math.abs(value - (shifted[index] as number))).toBeLessThan(1e-9);
        });
      }),
      { seed: 3, numRuns: 25 },
    );
  });

  it('incremental decoding with the cache equals the full pass, and batching changes nothing (property)', () => {
    fc.assert(
      fc.property(ids, ids, fc.integer({ min: 0, max: 3 }), (prompt, continuation, padding) => {
        const mask = [[...new Array(padding).fill(0), ...prompt.map(() => 1)]];
        const padded = [[...new Array(padding).fill(0), ...prompt]];
        const first = referenceForward(checkpoint, { inputIds: padded, attentionMask: mask });
        const fullMask = [[...(mask[0] as number[]), ...continuation.map(() => 1)]];
        const next = referenceForward(checkpoint, {
          inputIds: [continuation],
          attentionMask: fullMask,
          pastKeyValues: first.presentKeyValues,
        });
        const alone = referenceForward(checkpoint, { inputIds: [[...prompt, ...continuation]] });
        const vocab = config.vocab_size;
        const offset = prompt.length * vocab;
        next.logits.data.forEach((value, index) => {
          expect(Math.abs(value - (alone.logits.data[offset + index] as number))).toBeLessThan(
            1e-9,
          );
        });
        // Batched with another row: same logits for this row.
        const other = prompt.map((token) => (token + 1) % vocab);
        const batched = referenceForward(checkpoint, {
          inputIds: [prompt, other],
        });
        const single = referenceForward(checkpoint, { inputIds: [prompt] });
        single.logits.data.forEach((value, index) => {
          expect(batched.logits.data[index]).toBe(value);
        });
      }),
      { seed: 8, numRuns: 20 },
    );
  });

  it('validates its inputs with typed errors', () => {
    expect(() => referenceForward(checkpoint, { inputIds: [[13]] })).toThrow(
      /input\.inputIds\[0\]\[0\]/,
    );
    expect(() => referenceForward(checkpoint, { inputIds: [[1, 2], [3]] })).toThrow(
      /input\.inputIds\[1\]/,
    );
    expect(() => referenceForward(checkpoint, { inputIds: [] })).toThrow(/at least one row/);
    expect(() =>
      referenceForward(checkpoint, { inputIds: [[1, 2]], attentionMask: [[1, 1, 1]] }),
    ).toThrow(/input\.attentionMask\[0\]/);
    expect(() =>
      referenceForward(checkpoint, { inputIds: [[1, 2]], attentionMask: [[1, 2]] }),
    ).toThrow(/0 or 1/);
    expect(() => referenceForward(checkpoint, { inputIds: [[1]], pastKeyValues: [] })).toThrow(
      /input\.pastKeyValues/,
    );
    const first = referenceForward(checkpoint, { inputIds: [[1, 2]] });
    expect(() =>
      referenceForward(checkpoint, { inputIds: [[1], [2]], pastKeyValues: first.presentKeyValues }),
    ).toThrow(/input\.pastKeyValues\[0\]\.key/);
  });
});
