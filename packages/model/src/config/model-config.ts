import { InvalidArgumentError } from '@rlvr/core';
import { type FieldReader, fieldReader, isPlainObject } from './config-fields.js';
import { readFamilyFields } from './family-fields.js';
import type { LlamaConfig } from './llama-config.js';
import type { RopeScaling } from './rope.js';
import { readRopeFields } from './rope-fields.js';

/**
 * Model families (Hugging Face `model_type`) this package reads, writes, runs and exports. Each
 * one's rules are in {@link modelArchitecture}.
 */
export const MODEL_TYPES = ['llama', 'qwen2', 'qwen3', 'gemma3_text', 'smollm3'] as const;

/** One of {@link MODEL_TYPES}. */
export type ModelType = (typeof MODEL_TYPES)[number];

/** The attention kind of one layer, as `config.json`'s `layer_types` names it. */
export type AttentionLayerType = 'full_attention' | 'sliding_attention';

/**
 * A decoder configuration of any family in {@link MODEL_TYPES}, with Hugging Face's `config.json`
 * field names, resolved by {@link parseModelConfig} (HF's defaults filled in, per family). Every
 * {@link LlamaConfig} is one. The family fields are present exactly where the family has them,
 * in transformers 4.5x's names (RoPE as `rope_theta` / `rope_scaling` / `rope_local_base_freq`,
 * which transformers 5 converts to its `rope_parameters`); write it back with `JSON.stringify`.
 *
 * Do not branch on these fields to build a forward pass: {@link modelArchitecture} turns them into
 * the one per-layer description every implementation consumes.
 */
export type ModelConfig = Omit<LlamaConfig, 'model_type' | 'hidden_act'> & {
  model_type: ModelType;
  /** `'silu'` (SwiGLU), or `'gelu_pytorch_tanh'` (GeGLU with tanh GELU) for `gemma3_text`. */
  hidden_act: 'silu' | 'gelu_pytorch_tanh';
  /**
   * RoPE scaling of the (global) layers: `llama3` (Llama 3.1/3.2) or `linear`; absent = none.
   * Read from `rope_scaling` or transformers 5's `rope_parameters`.
   */
  rope_scaling?: RopeScaling;
  /** `gemma3_text`: the field transformers reads for the activation (same value as `hidden_act`). */
  hidden_activation?: 'gelu_pytorch_tanh';
  /** `gemma3_text`: attention scores are scaled by `query_pre_attn_scalar^−1/2`. */
  query_pre_attn_scalar?: number;
  /** `gemma3_text`: key `j` is visible from query `i` of a sliding layer iff `i − j < sliding_window`. */
  sliding_window?: number;
  /** `gemma3_text`: the kind of each layer (from `sliding_window_pattern` when the file has none). */
  layer_types?: AttentionLayerType[];
  /** `gemma3_text`: RoPE θ of the sliding-window layers (plain RoPE; `rope_theta` is the global one). */
  rope_local_base_freq?: number;
  /** `gemma3_text`: tanh soft-capping of the final logits; only `null` is implemented. */
  final_logit_softcapping?: null;
  /** `gemma3_text`: tanh soft-capping of attention scores; only `null` is implemented. */
  attn_logit_softcapping?: null;
  /** `smollm3`: one entry per layer, `1` = the layer applies RoPE, `0` = no positional encoding. */
  no_rope_layers?: number[];
};

/** The input accepted by {@link parseModelConfig}: a `config.json` object. */
export type ModelConfigInput = Pick<
  ModelConfig,
  'hidden_size' | 'num_hidden_layers' | 'num_attention_heads' | 'intermediate_size' | 'vocab_size'
> & { [field: string]: unknown };

/** Hugging Face's class name per family (the default of `architectures`). */
const ARCHITECTURES: Record<ModelType, string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  gemma3_text: 'Gemma3ForCausalLM',
  smollm3: 'SmolLM3ForCausalLM',
};

/** Families added after `llama` / `qwen2` (their defaults and rules are Hugging Face's own). */
const NEW_FAMILIES = new Set<string>(['qwen3', 'gemma3_text', 'smollm3']);

/** Shared parser behind {@link parseModelConfig} and `parseLlamaConfig`. @internal */
export function parseDecoderConfig(
  json: unknown,
  options: { functionName: string; modelTypes: readonly ModelType[]; ropeScaling: boolean },
): ModelConfig {
  const { functionName } = options;
  if (!isPlainObject(json)) {
    throw new InvalidArgumentError({
      parameter: 'config',
      functionName,
      value: json,
      expected: 'a config.json object',
    });
  }
  const raw = json;
  const read = fieldReader(raw, functionName);
  const modelType = raw.model_type ?? 'llama';
  if (!(options.modelTypes as readonly unknown[]).includes(modelType)) {
    const hint =
      modelType === 'gemma3'
        ? " (Gemma3ForConditionalGeneration: the multimodal model; its text part loads as 'gemma3_text')"
        : '';
    read.fail(
      'model_type',
      modelType,
      `one of ${options.modelTypes.map((t) => `'${t}'`).join(', ')}${hint}`,
    );
  }
  const model_type = modelType as ModelType;
  const shape = readShape(raw, read, model_type);
  const noScaling = `null or absent (RoPE scaling is not supported by ${functionName}; parseModelConfig reads 'llama3' and 'linear')`;
  if (!options.ropeScaling && raw.rope_scaling != null) {
    read.fail('rope_scaling', raw.rope_scaling, noScaling);
  }
  const rope = readRopeFields(raw, read, {
    theta: model_type === 'gemma3_text' ? 1e6 : model_type === 'smollm3' ? 2e6 : 10000,
    ...(model_type === 'gemma3_text' ? { localTheta: 10000 } : {}),
  });
  if (!options.ropeScaling && rope.scaling !== null) {
    read.fail('rope_parameters', raw.rope_parameters, noScaling);
  }
  const family = readFamilyFields(raw, read, model_type, shape.num_hidden_layers, rope.localTheta);
  const config: ModelConfig = {
    model_type,
    architectures: readArchitectures(raw, read, model_type),
    ...shape,
    rope_theta: rope.theta,
    tie_word_embeddings: read.boolean(
      'tie_word_embeddings',
      NEW_FAMILIES.has(model_type) && model_type !== 'qwen3',
    ),
    max_position_embeddings: read.positiveInteger(
      'max_position_embeddings',
      model_type === 'gemma3_text' ? 131072 : NEW_FAMILIES.has(model_type) ? 32768 : 2048,
    ),
    attention_bias: readAttentionBias(raw, read, model_type),
    hidden_act: family.hidden_act,
    initializer_range: read.positiveNumber('initializer_range', 0.02),
    bos_token_id: read.tokenId('bos_token_id'),
    eos_token_id: readEos(raw, read),
    pad_token_id: read.tokenId('pad_token_id'),
  };
  if (rope.scaling !== null) config.rope_scaling = rope.scaling;
  return { ...config, ...family.extra };
}

/** Sizes and norm epsilon, with each family's Hugging Face defaults. */
function readShape(raw: Record<string, unknown>, read: FieldReader, modelType: ModelType) {
  const hidden_size = read.positiveInteger('hidden_size');
  const num_hidden_layers = read.positiveInteger('num_hidden_layers');
  const num_attention_heads = read.positiveInteger('num_attention_heads');
  if (NEW_FAMILIES.has(modelType) && raw.num_key_value_heads == null) {
    read.fail(
      'num_key_value_heads',
      raw.num_key_value_heads,
      `a positive integer (required for ${modelType}: Hugging Face's default differs by family)`,
    );
  }
  const num_key_value_heads = read.positiveInteger('num_key_value_heads', num_attention_heads);
  if (num_attention_heads % num_key_value_heads !== 0) {
    read.fail(
      'num_key_value_heads',
      num_key_value_heads,
      `a divisor of num_attention_heads (${num_attention_heads})`,
    );
  }
  const familyHeadDim = modelType === 'gemma3_text' ? 256 : modelType === 'qwen3' ? 128 : undefined;
  if (
    raw.head_dim == null &&
    familyHeadDim === undefined &&
    hidden_size % num_attention_heads !== 0
  ) {
    read.fail(
      'hidden_size',
      hidden_size,
      `a multiple of num_attention_heads (${num_attention_heads})`,
    );
  }
  const head_dim = read.positiveInteger(
    'head_dim',
    familyHeadDim ?? hidden_size / num_attention_heads,
  );
  if (head_dim % 2 !== 0) read.fail('head_dim', head_dim, 'an even integer (RoPE rotates pairs)');
  return {
    hidden_size,
    num_hidden_layers,
    num_attention_heads,
    num_key_value_heads,
    head_dim,
    intermediate_size: read.positiveInteger('intermediate_size'),
    rms_norm_eps: read.positiveNumber('rms_norm_eps', 1e-6),
    vocab_size: read.positiveInteger('vocab_size'),
  };
}

function readAttentionBias(
  raw: Record<string, unknown>,
  read: FieldReader,
  modelType: ModelType,
): boolean {
  if (modelType === 'qwen2') {
    if (raw.attention_bias === false) {
      read.fail(
        'attention_bias',
        false,
        'true or absent for qwen2 (its q/k/v projections have bias)',
      );
    }
    return true;
  }
  const bias = read.boolean('attention_bias', false);
  if (bias && NEW_FAMILIES.has(modelType)) {
    read.fail(
      'attention_bias',
      bias,
      `false or absent for ${modelType} (projection biases are not implemented for it)`,
    );
  }
  if (raw.mlp_bias != null && raw.mlp_bias !== false) {
    read.fail('mlp_bias', raw.mlp_bias, 'false or absent (MLP bias is not supported)');
  }
  if (raw.pretraining_tp != null) read.positiveInteger('pretraining_tp');
  return bias;
}

function readArchitectures(
  raw: Record<string, unknown>,
  read: FieldReader,
  modelType: ModelType,
): string[] {
  const value = raw.architectures;
  if (value == null) return [ARCHITECTURES[modelType]];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return [...value];
  return read.fail('architectures', value, 'an array of strings');
}

function readEos(raw: Record<string, unknown>, read: FieldReader): number | number[] | null {
  const value = raw.eos_token_id ?? null;
  if (!Array.isArray(value)) return read.tokenId('eos_token_id');
  if (!value.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0)) {
    read.fail('eos_token_id', value, 'a token id, an array of token ids, or null');
  }
  return [...(value as number[])];
}

/**
 * Validates a `config.json` object of any family in {@link MODEL_TYPES} (Hugging Face field names,
 * transformers 4 or 5) and fills in Hugging Face's defaults for that family: Llama 2/3.x (incl.
 * `rope_scaling.rope_type: 'llama3'`), SmolLM2 (`llama`), Qwen2/2.5, Qwen3, Gemma 3 text
 * (`gemma3_text`: sliding-window and global layers) and SmolLM3 (`no_rope_layers`). Fields that
 * change the model's math and are not implemented are refused by name (never ignored): other RoPE
 * scalings, sliding windows outside Gemma 3, logit soft-capping, bidirectional attention, MLP bias,
 * projection biases outside Llama/Qwen2. Other unknown fields are ignored (HF files carry many).
 *
 * @example
 * ```ts
 * const config = parseModelConfig(JSON.parse(readFileSync('gemma-3-1b-it/config.json', 'utf8')));
 * modelArchitecture(config).layers[5].window; // null (every 6th layer is global), layers[0]: 512
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming the field (`config.rope_scaling.rope_type`,
 * `config.final_logit_softcapping`, `config.hidden_size`, …).
 */
export function parseModelConfig(json: unknown): ModelConfig {
  return parseDecoderConfig(json, {
    functionName: 'parseModelConfig',
    modelTypes: MODEL_TYPES,
    ropeScaling: true,
  });
}
