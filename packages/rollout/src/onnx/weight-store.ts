import {
  InvalidArgumentError,
  type NamedTensor,
  ShapeMismatchError,
  validateOptions,
  type WeightSnapshot,
} from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { type BoundWeights, layoutWeights } from '../loop/loop-decoder.js';
import type { WeightInput } from '../loop/loop-graph.js';

/**
 * Checks a weight snapshot against the checkpoint (names and shapes) and returns the checkpoint with
 * the snapshot's tensors in place of the old ones (missing names keep their values) and the list
 * of tensors it replaces.
 * @throws {InvalidArgumentError} for an unknown key, a non-array `tensors` or an unknown name;
 * {@link ShapeMismatchError} for a tensor of the wrong shape or type.
 * @internal
 */
export function mergeSnapshot(
  checkpoint: Checkpoint,
  snapshot: WeightSnapshot,
  functionName: string,
): { next: Checkpoint; changed: NamedTensor[] } {
  const raw = validateOptions<WeightSnapshot>(snapshot, {
    parameter: 'snapshot',
    functionName,
    known: ['step', 'tensors'],
  });
  if (!Array.isArray(raw.tensors)) {
    throw new InvalidArgumentError({
      parameter: 'snapshot.tensors',
      functionName,
      value: raw.tensors,
      expected: 'an array of named tensors',
    });
  }
  const current = new Map(checkpoint.tensors.map((tensor) => [tensor.name, tensor]));
  raw.tensors.forEach((tensor: NamedTensor, index: number) => {
    const existing = current.get(tensor?.name);
    if (!existing) {
      throw new InvalidArgumentError({
        parameter: `snapshot.tensors[${index}].name`,
        functionName,
        value: tensor?.name,
        expected: 'the Hugging Face name of a tensor of the model',
      });
    }
    if (
      !(tensor.data instanceof Float32Array) ||
      tensor.data.length !== existing.data.length ||
      tensor.shape.join(',') !== existing.shape.join(',')
    ) {
      throw new ShapeMismatchError({
        parameter: `snapshot.tensors[${index}]`,
        functionName,
        expected: `a Float32Array tensor of shape [${existing.shape.join(', ')}]`,
        actual: `shape [${tensor.shape?.join(', ')}] with ${tensor.data?.length} values`,
      });
    }
    current.set(tensor.name, tensor);
  });
  return {
    next: { ...checkpoint, tensors: checkpoint.tensors.map((tensor) => current.get(tensor.name)!) },
    changed: raw.tensors,
  };
}

/**
 * The weights of a loop graph built with weight inputs, in one flat float32 array: a
 * SharedArrayBuffer when worker threads read it (each worker copies it into the ArrayBuffer its
 * session reads, since onnxruntime-node does not accept shared memory), else the very array the
 * in-process session reads.
 * @internal
 */
export class WeightStore {
  readonly bound: BoundWeights;
  private readonly offsets: Map<string, number>;

  constructor(checkpoint: Checkpoint, inputs: readonly WeightInput[], shared: boolean) {
    const layout = layoutWeights(inputs);
    const total = layout.reduce((sum, entry) => sum + entry.length, 0);
    const data = shared
      ? new Float32Array(new SharedArrayBuffer(total * 4))
      : new Float32Array(total);
    this.bound = { layout, data };
    this.offsets = new Map(layout.map((entry) => [entry.name, entry.offset]));
    this.write(checkpoint.tensors);
  }

  /** Copies tensors (checked names and sizes) into the flat array. */
  write(tensors: readonly NamedTensor[]): void {
    for (const tensor of tensors) {
      const offset = this.offsets.get(tensor.name);
      if (offset !== undefined) this.bound.data.set(tensor.data, offset);
    }
  }
}
