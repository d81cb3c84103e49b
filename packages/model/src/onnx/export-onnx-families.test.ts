import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { parseModelConfig } from '../config/model-config.js';
import { defaultPositionIds, referenceForward } from '../reference/reference-forward.js';
import { TINY_FAMILY_CONFIGS } from '../testing/families.js';
import { exportOnnx } from './export-onnx.js';

// exportOnnx of each family's tiny model (every special rule on) in onnxruntime against the float64
// reference: a left-padded batch in one call, then decoding one token at a time through the KV
// cache well past Gemma's window of 3 (the cache keeps every position; the mask drops the old ones).
const TOLERANCE = 1e-4;
const VOCAB = 29;
const measured: string[] = [];
afterAll(() => console.log(`ONNX vs float64 reference:\n${measured.join('\n')}`));

type Feeds = Record<string, ort.Tensor>;
const int64 = (rows: number[][]) =>
  new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [
    rows.length,
    (rows[0] as number[]).length,
  ]);

function makeCheckpoint(family: keyof typeof TINY_FAMILY_CONFIGS, seed: number): Checkpoint {
  const config = parseModelConfig({ ...TINY_FAMILY_CONFIGS[family], vocab_size: VOCAB });
  return createRandomCheckpoint(config, { seed, std: 0.3, perturbStd: 0.1 });
}

/** max |Δ| of logits and of log-softmax over the rows of the real (mask 1) query positions. */
function differences(
  actual: Float32Array,
  expected: Float64Array,
  rows: number[],
): { logits: number; logP: number } {
  let logits = 0;
  let logP = 0;
  for (const row of rows) {
    const a = Array.from(actual.subarray(row * VOCAB, (row + 1) * VOCAB));
    const e = Array.from(expected.subarray(row * VOCAB, (row + 1) * VOCAB));
    const logSum = (values: number[]) => {
      const max = Math.max(...values);
      return max + Math.log(values.reduce((sum, value) => sum + Math.exp(value - max), 0));
    };
    const [la, le] = [logSum(a), logSum(e)];
    for (let v = 0; v < VOCAB; v++) {
      logits = Math.max(logits, Math.abs((a[v] as number) - (e[v] as number)));
      logP = Math.max(logP, Math.abs((a[v] as number) - la - ((e[v] as number) - le)));
    }
  }
  return { logits, logP };
}

describe('exportOnnx of each family matches the float64 reference', () => {
  for (const [index, family] of (
    Object.keys(TINY_FAMILY_CONFIGS) as (keyof typeof TINY_FAMILY_CONFIGS)[]
  ).entries()) {
    it(`${family}: left-padded batch, then 8 cached decode steps`, async () => {
      const checkpoint = makeCheckpoint(family, 40 + index);
      const { config } = checkpoint;
      const session = await ort.InferenceSession.create(exportOnnx(checkpoint), {
        intraOpNumThreads: 1,
      });
      try {
        const ids = [
          [0, 0, 3, 9, 4, 11, 2],
          [5, 6, 7, 8, 1, 12, 20],
        ];
        const mask = [
          [0, 0, 1, 1, 1, 1, 1],
          [1, 1, 1, 1, 1, 1, 1],
        ];
        const feeds: Feeds = {
          input_ids: int64(ids),
          attention_mask: int64(mask),
          position_ids: int64(defaultPositionIds(mask, 7)),
        };
        for (let layer = 0; layer < config.num_hidden_layers; layer++) {
          for (const part of ['key', 'value']) {
            feeds[`past_key_values.${layer}.${part}`] = new ort.Tensor(
              'float32',
              new Float32Array(0),
              [2, config.num_key_value_heads, 0, config.head_dim],
            );
          }
        }
        let out = await session.run(feeds);
        const real = mask.flatMap((row, b) =>
          row.flatMap((value, s) => (value ? [b * 7 + s] : [])),
        );
        const first = differences(
          out.logits?.data as Float32Array,
          referenceForward(checkpoint, { inputIds: ids, attentionMask: mask }).logits.data,
          real,
        );
        let worst = first;
        const rows = ids.map((row) => [...row]);
        const fullMask = mask.map((row) => [...row]);
        for (let step = 0; step < 8; step++) {
          const next = [(step * 7 + 3) % VOCAB, (step * 5 + 1) % VOCAB];
          for (const [b, row] of rows.entries()) row.push(next[b] as number);
          for (const row of fullMask) row.push(1);
          const stepFeeds: Feeds = {
            input_ids: int64(next.map((id) => [id])),
            attention_mask: int64(fullMask),
            position_ids: int64(defaultPositionIds(fullMask, 1)),
          };
          for (let layer = 0; layer < config.num_hidden_layers; layer++) {
            for (const part of ['key', 'value']) {
              stepFeeds[`past_key_values.${layer}.${part}`] = out[
                `present.${layer}.${part}`
              ] as ort.Tensor;
            }
          }
          out = await session.run(stepFeeds);
          const length = (rows[0] as number[]).length;
          const reference = referenceForward(checkpoint, {
            inputIds: rows,
            attentionMask: fullMask,
          });
          const lastRows = new Float64Array(2 * VOCAB);
          for (let b = 0; b < 2; b++) {
            const offset = (b * length + length - 1) * VOCAB;
            lastRows.set(reference.logits.data.subarray(offset, offset + VOCAB), b * VOCAB);
          }
          const step_ = differences(out.logits?.data as Float32Array, lastRows, [0, 1]);
          worst = {
            logits: Math.max(worst.logits, step_.logits),
            logP: Math.max(worst.logP, step_.logP),
          };
        }
        measured.push(
          `${family}: max |Δ logits| ${worst.logits.toExponential(2)}, max |Δ log p| ${worst.logP.toExponential(2)}`,
        );
        expect(worst.logits).toBeLessThan(TOLERANCE);
      } finally {
        await session.release();
      }
    });
  }
});
