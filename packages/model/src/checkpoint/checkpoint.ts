import {
  assertKnownKeys,
  InvalidArgumentError,
  type NamedTensor,
  NonFiniteError,
  ShapeMismatchError,
} from '@rlvr/core';
import { type ModelConfig, parseModelConfig } from '../config/model-config.js';
import { llamaTensorSpecs } from './tensor-names.js';

/** A tokenizer as stored in a checkpoint folder: `tokenizer.json` and `tokenizer_config.json`. */
export type TokenizerFiles = {
  /** The parsed `tokenizer.json`. */
  json: object;
  /** The parsed `tokenizer_config.json` (special tokens, chat template), if any. */
  config?: object;
};

/**
 * A model in memory: its config, its weights under Hugging Face names (float32, row-major) and
 * optionally its tokenizer and `generation_config.json`. This is what {@link loadCheckpoint} returns
 * and {@link saveCheckpoint} writes; it is plain data (survives `structuredClone`).
 */
export type Checkpoint = {
  /** Any family of {@link MODEL_TYPES} (a {@link LlamaConfig} is one). */
  config: ModelConfig;
  /** Weights with Hugging Face names (see {@link llamaTensorNames}); order does not matter. */
  tensors: NamedTensor[];
  tokenizer?: TokenizerFiles;
  /** The parsed `generation_config.json`, if any. */
  generationConfig?: object;
};

/**
 * Returns the tensor called `name`.
 *
 * @example
 * ```ts
 * const embedding = getTensor(checkpoint, 'model.embed_tokens.weight'); // shape [vocab, hidden]
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` when the checkpoint has no such tensor.
 */
export function getTensor(checkpoint: Checkpoint, name: string): NamedTensor {
  const tensor = checkpoint.tensors.find((item) => item.name === name);
  if (!tensor) {
    throw new InvalidArgumentError({
      parameter: 'name',
      functionName: 'getTensor',
      value: name,
      expected: 'the name of a tensor in the checkpoint',
    });
  }
  return tensor;
}

/**
 * Returns `tensors` as a map from name to tensor.
 * @internal
 */
export function tensorMap(tensors: readonly NamedTensor[]): Map<string, NamedTensor> {
  return new Map(tensors.map((tensor) => [tensor.name, tensor]));
}

/**
 * Checks that `checkpoint` has a valid config and exactly the tensors its config needs, with the
 * right shapes and finite float32 data (extra tensors such as rotary caches are rejected so that a
 * typo in a name cannot go unnoticed). Returns the checkpoint with its config parsed.
 *
 * @example
 * ```ts
 * validateCheckpoint(checkpoint, { functionName: 'exportOnnx' });
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} naming the
 * tensor.
 */
export function validateCheckpoint(
  checkpoint: unknown,
  options: { functionName: string; parameter?: string; checkFinite?: boolean },
): Checkpoint {
  assertKnownKeys(options, {
    parameter: 'options',
    functionName: 'validateCheckpoint',
    known: ['functionName', 'parameter', 'checkFinite'],
  });
  const { functionName } = options;
  const parameter = options.parameter ?? 'checkpoint';
  if (checkpoint === null || typeof checkpoint !== 'object') {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value: checkpoint,
      expected: 'a checkpoint object { config, tensors }',
    });
  }
  const candidate = checkpoint as Partial<Checkpoint>;
  let config: ModelConfig;
  try {
    config = parseModelConfig(candidate.config);
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.${error.parameter}`,
        functionName,
        value: error.value,
        expected: error.message.replace(/^.*expected /, '').replace(/, got .*$/, ''),
        cause: error,
      });
    }
    throw error;
  }
  if (!Array.isArray(candidate.tensors)) {
    throw new InvalidArgumentError({
      parameter: `${parameter}.tensors`,
      functionName,
      value: candidate.tensors,
      expected: 'an array of { name, shape, data: Float32Array }',
    });
  }
  const byName = new Map<string, NamedTensor>();
  for (const [index, tensor] of candidate.tensors.entries()) {
    if (
      tensor === null ||
      typeof tensor !== 'object' ||
      typeof tensor.name !== 'string' ||
      !Array.isArray(tensor.shape) ||
      !(tensor.data instanceof Float32Array)
    ) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.tensors[${index}]`,
        functionName,
        value: tensor,
        expected: 'a tensor { name: string, shape: number[], data: Float32Array }',
      });
    }
    if (byName.has(tensor.name)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.tensors[${index}].name`,
        functionName,
        value: tensor.name,
        expected: 'a name used only once',
      });
    }
    byName.set(tensor.name, tensor);
  }
  const specs = llamaTensorSpecs(config);
  const expectedNames = new Set(specs.map((spec) => spec.name));
  for (const spec of specs) {
    const tensor = byName.get(spec.name);
    if (!tensor) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.tensors`,
        functionName,
        value: candidate.tensors,
        expected: `a tensor named '${spec.name}' (shape [${spec.shape.join(', ')}])`,
      });
    }
    const size = spec.shape.reduce((product, dim) => product * dim, 1);
    if (
      tensor.shape.length !== spec.shape.length ||
      tensor.shape.some((dim, axis) => dim !== spec.shape[axis]) ||
      tensor.data.length !== size
    ) {
      throw new ShapeMismatchError({
        parameter: `${parameter}.tensors['${spec.name}']`,
        functionName,
        expected: `shape [${spec.shape.join(', ')}] with ${size} values`,
        actual: `shape [${tensor.shape.join(', ')}] with ${tensor.data.length} values`,
      });
    }
    if (options.checkFinite !== false) {
      const { data } = tensor;
      // x * 0 is NaN exactly for NaN and ±Infinity: one fast pass, then locate the culprit.
      let probe = 0;
      for (let offset = 0; offset < data.length; offset++) probe += (data[offset] as number) * 0;
      if (probe === 0) continue;
      for (let offset = 0; offset < data.length; offset++) {
        const value = data[offset] as number;
        if (!Number.isFinite(value)) {
          throw new NonFiniteError({
            parameter: `${parameter}.tensors['${spec.name}'].data`,
            functionName,
            index: offset,
            value,
          });
        }
      }
    }
  }
  for (const name of byName.keys()) {
    if (!expectedNames.has(name)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}.tensors`,
        functionName,
        value: name,
        expected: `only the tensors of a ${config.model_type} model with this config (unexpected tensor name)`,
      });
    }
  }
  return { ...candidate, config, tensors: candidate.tensors } as Checkpoint;
}
