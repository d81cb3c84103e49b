import { RlvrError } from '@rlvr/core';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import {
  createLlamaLayers,
  createRandomCheckpoint,
  defaultPositionIds,
  GraphBuilder,
  OnnxDataType,
  type ProjectionLayout,
  parseLlamaConfig,
  referenceForward,
  validateCheckpoint,
  valueInfo,
} from '../index.js';

/**
 * A decoder without a KV cache, built only from the public graph API: what a package that needs
 * its own graph (like @rlvr/rollout's sampling loop) does.
 */
function buildDecoder(
  checkpoint: ReturnType<typeof createRandomCheckpoint>,
  projection: ProjectionLayout,
) {
  const g = new GraphBuilder();
  const valid = validateCheckpoint(checkpoint, { functionName: 'test' });
  const llama = createLlamaLayers(g, valid, { projection });
  const { hidden_size: hidden, num_attention_heads: heads, head_dim: headDim } = valid.config;
  const twoD = projection === 'gemm';
  const idsShape = g.op('Shape', ['input_ids']);
  const embedded = llama.embed(g, 'input_ids');
  const bias = llama.attentionBias(g, 'input_ids', 'attention_mask');
  const [cos, sin] = llama.ropeTables(g, 'position_ids');
  const state = llama.decoderLayers(
    g,
    twoD ? g.op('Reshape', [embedded, g.int64([-1, hidden])]) : embedded,
    {
      cos,
      sin,
      headsShape: (count) =>
        twoD
          ? g.op('Concat', [idsShape, g.int64([count, headDim])], { axis: 0 })
          : g.int64([0, 0, count, headDim]),
      attend: (_layer, query, key, value) => {
        const context = llama.attention(g, query, [
          { keys: llama.prepareKeys(g, key), values: llama.prepareValues(g, value), bias },
        ]);
        return llama.mergeHeads(
          g,
          context,
          g.int64(twoD ? [-1, heads * headDim] : [0, 0, heads * headDim]),
        );
      },
    },
  );
  llama.logits(g, state, 'logits');
  return g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'test',
    graph: {
      name: 'decoder',
      input: ['input_ids', 'attention_mask', 'position_ids'].map((name) =>
        valueInfo(name, OnnxDataType.INT64, ['B', 'S']),
      ),
      output: [valueInfo('logits', OnnxDataType.FLOAT)],
    },
  });
}

describe('GraphBuilder + createLlamaLayers (advanced API)', () => {
  it.each([
    ['matmul', 2],
    ['gemm', 2],
    ['gemm', 1],
  ] as const)(
    'should build a decoder with %s projections (%i KV heads) that matches referenceForward',
    async (projection, kvHeads) => {
      const config = parseLlamaConfig({
        model_type: 'qwen2',
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: kvHeads,
        intermediate_size: 40,
        vocab_size: 19,
      });
      const checkpoint = createRandomCheckpoint(config, { seed: 5, std: 0.3, perturbStd: 0.1 });
      const session = await ort.InferenceSession.create(buildDecoder(checkpoint, projection), {
        intraOpNumThreads: 1,
      });
      const inputIds = [
        [0, 0, 5, 6, 7],
        [8, 9, 10, 11, 12],
      ];
      const mask = [
        [0, 0, 1, 1, 1],
        [1, 1, 1, 1, 1],
      ];
      const positions = defaultPositionIds(mask, 5);
      const tensor = (rows: number[][]) =>
        new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [2, 5]);
      const out = await session.run({
        input_ids: tensor(inputIds),
        attention_mask: tensor(mask),
        position_ids: tensor(positions),
      });
      await session.release();
      const logits = out.logits!.data as Float32Array;
      const reference = referenceForward(checkpoint, { inputIds, attentionMask: mask });
      let max = 0;
      mask.flat().forEach((visible, position) => {
        if (!visible) return;
        for (let v = 0; v < 19; v++) {
          const index = position * 19 + v;
          max = Math.max(max, Math.abs(logits[index]! - reference.logits.data[index]!));
        }
      });
      expect(max).toBeLessThan(1e-4);
    },
  );

  it('should share names and constants with subgraphs and refuse models over 2 GiB', () => {
    const g = new GraphBuilder();
    const body = g.child();
    const outer = g.op('Add', ['x', g.float([1])]);
    const inner = body.op('Add', ['x', body.float([1])]);
    expect(inner).not.toBe(outer); // one name space for the graph and its subgraphs
    expect(body.float([1])).toBe(g.float([1])); // constants live once, in the main graph
    expect(g.int64([1], [])).not.toBe(g.int64([1])); // a scalar is not a 1-D tensor
    let filled = false;
    g.floatTensor('huge', [2 ** 29 + 2 ** 24], () => {
      filled = true;
    });
    let error: unknown;
    try {
      g.encode(
        {
          irVersion: 8,
          opset: 17,
          producerName: 'test',
          graph: { name: 'g', input: [], output: [] },
        },
        'mine',
      );
    } catch (caught) {
      error = caught;
    }
    expect(RlvrError.isInstance(error) && error.code).toBe('UNAVAILABLE');
    expect((error as Error).message).toMatch(/^mine\(\).*2 GiB/);
    expect(filled).toBe(false); // refused before encoding anything
    expect(() => g.floatTensor('huge', [1], () => undefined)).toThrow(/added twice/);
  });
});
