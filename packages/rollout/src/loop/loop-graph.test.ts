import { RlvrError } from '@rlvr/core';
import { type Checkpoint, llamaTensorSpecs, parseLlamaConfig } from '@rlvr/model';
import { describe, expect, it } from 'vitest';
import { createOnnxSampler } from '../onnx/onnx-sampler.js';
import { buildLoopGraph, buildLoopGraphWithWeightInputs } from './loop-graph.js';

/**
 * A valid checkpoint whose weights take ~2.4 GB as ONNX initializers while using ~250 MB of
 * memory: every tensor of one size shares one array.
 */
function oversizedCheckpoint(): Checkpoint {
  const config = parseLlamaConfig({
    vocab_size: 16,
    hidden_size: 4096,
    num_hidden_layers: 3,
    num_attention_heads: 32,
    intermediate_size: 11008,
  });
  const shared = new Map<number, Float32Array>();
  const tensors = llamaTensorSpecs(config).map(({ name, shape }) => {
    const size = shape.reduce((product, dim) => product * dim, 1);
    let data = shared.get(size);
    if (!data) {
      data = new Float32Array(size);
      shared.set(size, data);
    }
    return { name, shape: [...shape], data };
  });
  return { config, tensors };
}

describe('the loop graph is built from @rlvr/model (one Llama graph)', () => {
  it('should refuse a model over the 2 GiB single-file limit with UNAVAILABLE on the optimum engine', async () => {
    // Regression: the guard lived only in @rlvr/model's copy of the graph builder; rollout's copy
    // handed 2.4 GB to protobufjs and onnxruntime then failed to parse the result.
    const started = performance.now();
    const error = await createOnnxSampler({
      checkpoint: oversizedCheckpoint(),
      engine: 'optimum',
      workers: 0,
    }).catch((caught: unknown) => caught);
    expect(RlvrError.isInstance(error) && error.code).toBe('UNAVAILABLE');
    expect((error as Error).message).toMatch(/exportOnnx\(\).*2 GiB protobuf limit/);
    expect(performance.now() - started).toBeLessThan(20_000); // refused before encoding
  });

  it('should refuse it when the weights are initializers, and take it as weight inputs', () => {
    const checkpoint = oversizedCheckpoint();
    let error: unknown;
    try {
      buildLoopGraph(checkpoint);
    } catch (caught) {
      error = caught;
    }
    expect(RlvrError.isInstance(error) && error.code).toBe('UNAVAILABLE');
    expect((error as Error).message).toMatch(/buildLoopGraph\(\).*2 GiB protobuf limit/);
    // the sampler's loop graph holds no weights: no size limit, and a small model file
    const { bytes, weights } = buildLoopGraphWithWeightInputs(checkpoint);
    expect(bytes.byteLength).toBeLessThan(1_000_000);
    expect(weights.map((weight) => weight.name).sort()).toEqual(
      checkpoint.tensors.map((tensor) => tensor.name).sort(),
    );
  });
});
