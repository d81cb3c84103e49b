import type { FieldReader } from './config-fields.js';
import type { AttentionLayerType, ModelConfig, ModelType } from './model-config.js';

/** The family-specific part of a resolved config. @internal */
export type FamilyFields = {
  hidden_act: ModelConfig['hidden_act'];
  /** Fields only this family has (added to the resolved config as they are). */
  extra: Partial<ModelConfig>;
};

const LAYER_TYPES: readonly AttentionLayerType[] = ['full_attention', 'sliding_attention'];

/** Refuses sliding-window settings on a family without sliding-window layers. */
function refuseSlidingWindow(
  raw: Record<string, unknown>,
  read: FieldReader,
  modelType: ModelType,
) {
  if (raw.use_sliding_window === true) {
    read.fail(
      'use_sliding_window',
      true,
      `false or absent (sliding-window attention is not implemented for ${modelType})`,
    );
  }
  const layerTypes = raw.layer_types;
  if (Array.isArray(layerTypes) && layerTypes.some((type) => type !== 'full_attention')) {
    read.fail('layer_types', layerTypes, `only 'full_attention' entries for ${modelType}`);
  }
}

function mustBeNull(raw: Record<string, unknown>, read: FieldReader, field: string, what: string) {
  if (raw[field] != null)
    read.fail(field, raw[field], `null or absent (${what} is not implemented)`);
}

/** Gemma 3's layer kinds: `layer_types`, else every `sliding_window_pattern`-th layer is global. */
function gemmaLayerTypes(
  raw: Record<string, unknown>,
  read: FieldReader,
  layers: number,
): AttentionLayerType[] {
  const given = raw.layer_types;
  if (given != null) {
    if (
      !Array.isArray(given) ||
      given.length !== layers ||
      !given.every((type) => LAYER_TYPES.includes(type))
    ) {
      read.fail(
        'layer_types',
        given,
        `an array of ${layers} entries, each 'full_attention' or 'sliding_attention'`,
      );
    }
    return [...(given as AttentionLayerType[])];
  }
  const pattern = read.positiveInteger('sliding_window_pattern', 6);
  return Array.from({ length: layers }, (_, index) =>
    (index + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention',
  );
}

function gemmaFields(
  raw: Record<string, unknown>,
  read: FieldReader,
  layers: number,
  localTheta: number,
): FamilyFields {
  const activation = raw.hidden_activation ?? 'gelu_pytorch_tanh';
  if (activation !== 'gelu_pytorch_tanh') {
    read.fail('hidden_activation', activation, "'gelu_pytorch_tanh'");
  }
  mustBeNull(raw, read, 'final_logit_softcapping', 'final logit soft-capping');
  mustBeNull(raw, read, 'attn_logit_softcapping', 'attention logit soft-capping');
  if (raw.use_bidirectional_attention != null && raw.use_bidirectional_attention !== false) {
    read.fail(
      'use_bidirectional_attention',
      raw.use_bidirectional_attention,
      'false or absent (bidirectional attention, EmbeddingGemma, is not implemented)',
    );
  }
  return {
    hidden_act: 'gelu_pytorch_tanh',
    extra: {
      hidden_activation: 'gelu_pytorch_tanh',
      query_pre_attn_scalar: read.positiveNumber('query_pre_attn_scalar', 256),
      sliding_window: read.positiveInteger('sliding_window', 4096),
      layer_types: gemmaLayerTypes(raw, read, layers),
      rope_local_base_freq: localTheta,
      final_logit_softcapping: null,
      attn_logit_softcapping: null,
    },
  };
}

/** SmolLM3's RoPE/NoPE layers: `no_rope_layers`, else NoPE every `no_rope_layer_interval`-th layer. */
function smolLm3Fields(
  raw: Record<string, unknown>,
  read: FieldReader,
  layers: number,
): FamilyFields {
  const given = raw.no_rope_layers;
  let noRopeLayers: number[];
  if (given != null) {
    if (
      !Array.isArray(given) ||
      given.length < layers ||
      !given.every((flag) => flag === 0 || flag === 1)
    ) {
      read.fail(
        'no_rope_layers',
        given,
        `an array of at least ${layers} entries, each 1 (RoPE) or 0 (no RoPE)`,
      );
    }
    noRopeLayers = (given as number[]).slice(0, layers);
  } else {
    const interval = read.positiveInteger('no_rope_layer_interval', 4);
    noRopeLayers = Array.from({ length: layers }, (_, index) =>
      (index + 1) % interval !== 0 ? 1 : 0,
    );
  }
  return { hidden_act: 'silu', extra: { no_rope_layers: noRopeLayers } };
}

/**
 * The fields that make a family what it is, read and checked (anything not implemented is refused
 * by name). `localTheta` is Gemma 3's sliding-layer θ from {@link readRopeFields}. @internal
 */
export function readFamilyFields(
  raw: Record<string, unknown>,
  read: FieldReader,
  modelType: ModelType,
  layers: number,
  localTheta: number | undefined,
): FamilyFields {
  if (modelType === 'gemma3_text') return gemmaFields(raw, read, layers, localTheta ?? 10000);
  refuseSlidingWindow(raw, read, modelType);
  const activation = raw.hidden_act ?? 'silu';
  if (activation !== 'silu') read.fail('hidden_act', activation, "'silu'");
  if (modelType === 'smollm3') return smolLm3Fields(raw, read, layers);
  return { hidden_act: 'silu', extra: {} };
}
