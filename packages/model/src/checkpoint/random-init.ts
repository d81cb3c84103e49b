import {
  createRng,
  InvalidArgumentError,
  type NamedTensor,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import { modelArchitecture } from '../config/architecture.js';
import { type ModelConfig, parseModelConfig } from '../config/model-config.js';
import type { Checkpoint } from './checkpoint.js';
import { llamaTensorSpecs } from './tensor-names.js';

/** Options of {@link createRandomCheckpoint}. */
export type RandomCheckpointOptions = {
  /** Seed of the generator (core's `createRng`); the same seed gives the same weights. */
  seed: number;
  /** Standard deviation of the normal init of weight matrices (default `config.initializer_range`). */
  std?: number;
  /**
   * Standard deviation of biases and of the deviation of norm weights from 1 (default 0: biases 0
   * and norm weights 1, as Hugging Face initializes them). Tests set it > 0 to exercise every term.
   */
  perturbStd?: number;
};

/**
 * A freshly initialized model: every weight matrix (embedding, projections, `lm_head`) drawn from
 * N(0, std²) with core's seeded generator, RMSNorm weights 1 (0 for Gemma 3's `(1 + w)` norms)
 * and biases 0 (Hugging Face's `_init_weights`). Tensors come in {@link llamaTensorSpecs} order; each tensor
 * draws from its own stream (`rng.derive(name)`), so adding a layer does not change the others.
 *
 * @example
 * ```ts
 * const config = parseLlamaConfig({ hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4,
 *   num_key_value_heads: 2, intermediate_size: 128, vocab_size: 32 });
 * const checkpoint = createRandomCheckpoint(config, { seed: 1 });
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` for an invalid config, seed or std.
 */
export function createRandomCheckpoint(
  config: ModelConfig,
  options: RandomCheckpointOptions,
): Checkpoint {
  const functionName = 'createRandomCheckpoint';
  const parsed = parseModelConfig(config);
  const opts = validateOptions<RandomCheckpointOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['seed', 'std', 'perturbStd'],
  });
  if (opts.seed === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options.seed',
      functionName,
      value: undefined,
      expected: 'an integer seed',
    });
  }
  const seed = validateInteger(opts.seed, { parameter: 'options.seed', functionName });
  const std = validateNumber(opts.std ?? parsed.initializer_range, {
    parameter: 'options.std',
    functionName,
    min: 0,
  });
  const perturbStd = validateNumber(opts.perturbStd ?? 0, {
    parameter: 'options.perturbStd',
    functionName,
    min: 0,
  });
  const rng = createRng(seed);
  // Norm weights start at the value that makes the norm an identity scale: 1, or 0 for (1 + w).
  const normBase = 1 - modelArchitecture(parsed).normOffset;
  const tensors: NamedTensor[] = llamaTensorSpecs(parsed).map(({ name, shape }) => {
    const size = shape.reduce((product, dim) => product * dim, 1);
    const data = new Float32Array(size);
    const stream = rng.derive(name);
    const isNorm = name.endsWith('norm.weight');
    const isBias = name.endsWith('.bias');
    const base = isNorm ? normBase : 0;
    const scale = isNorm || isBias ? perturbStd : std;
    if (scale > 0) {
      for (let index = 0; index < size; index++) data[index] = base + scale * stream.nextNormal();
    } else if (base !== 0) {
      data.fill(base);
    }
    return { name, shape: [...shape], data };
  });
  return { config: parsed, tensors };
}
