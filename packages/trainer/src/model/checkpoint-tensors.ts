import { InvalidArgumentError, type NamedTensor, ShapeMismatchError } from '@rlvr/core';
import { type Checkpoint, llamaTensorSpecs, type ModelConfig } from '@rlvr/model';

/**
 * A checkpoint's tensors checked against a config: every name the config has, with its Hugging
 * Face shape and float32 data, nothing else; optionally every value finite. Returns them by name
 * in the config's order (the data as given, not copied). @internal
 */
export function validatedTensors(
  config: ModelConfig,
  checkpoint: Checkpoint,
  options: { functionName: string; checkFinite?: boolean },
): Map<string, Float32Array> {
  const { functionName } = options;
  const expected = expectedShapes(config);
  const byName = new Map<string, NamedTensor>();
  for (const tensor of checkpoint.tensors) {
    if (!expected.has(tensor.name)) {
      throw new InvalidArgumentError({
        parameter: `checkpoint.tensors['${tensor.name}']`,
        functionName,
        value: tensor.name,
        expected: `a tensor name of this config (${expected.size} names, e.g. 'model.embed_tokens.weight')`,
      });
    }
    byName.set(tensor.name, tensor);
  }
  const out = new Map<string, Float32Array>();
  for (const [name, shape] of expected) {
    const tensor = byName.get(name);
    if (tensor === undefined) {
      throw new InvalidArgumentError({
        parameter: `checkpoint.tensors['${name}']`,
        functionName,
        value: undefined,
        expected: `a tensor of shape [${shape.join(', ')}]`,
      });
    }
    const size = shape.reduce((a, c) => a * c, 1);
    if (
      tensor.shape.length !== shape.length ||
      tensor.shape.some((dimension, index) => dimension !== shape[index]) ||
      !(tensor.data instanceof Float32Array) ||
      tensor.data.length !== size
    ) {
      throw new ShapeMismatchError({
        parameter: `checkpoint.tensors['${name}']`,
        functionName,
        expected: `shape [${shape.join(', ')}] with ${size} float32 values`,
        actual: `shape [${tensor.shape.join(', ')}] with ${tensor.data?.length} values`,
      });
    }
    if (options.checkFinite ?? true) {
      for (let index = 0; index < tensor.data.length; index++) {
        if (!Number.isFinite(tensor.data[index]!)) {
          throw new InvalidArgumentError({
            parameter: `checkpoint.tensors['${name}'].data[${index}]`,
            functionName,
            value: tensor.data[index],
            expected: 'a finite weight',
          });
        }
      }
    }
    out.set(name, tensor.data);
  }
  return out;
}

/** Every tensor of `config` by Hugging Face name, with its shape, in checkpoint order. @internal */
export function expectedShapes(config: ModelConfig): Map<string, number[]> {
  return new Map(llamaTensorSpecs(config).map((spec) => [spec.name, spec.shape]));
}
