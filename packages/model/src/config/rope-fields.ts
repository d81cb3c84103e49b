import { type FieldReader, isPlainObject } from './config-fields.js';
import type { RopeScaling } from './rope.js';

/** The RoPE settings of a config, resolved (see {@link readRopeFields}). @internal */
export type RopeFields = {
  /** θ of the global (full-attention) layers. */
  theta: number;
  /** Scaling of the global layers, or null. */
  scaling: RopeScaling | null;
  /** θ of Gemma 3's sliding-window layers (`rope_local_base_freq`), when `local` was asked for. */
  localTheta?: number;
};

function finiteNumber(reader: FieldReader, field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= min) {
    reader.fail(field, value, `a finite number > ${min}`);
  }
  return value as number;
}

/**
 * One `rope_scaling` object (or a `rope_parameters` entry) as {@link RopeScaling}, `null` for
 * `rope_type: 'default'` (or no type). Every other kind (`dynamic`, `yarn`, `longrope`, …) is
 * refused by name, as is a `partial_rotary_factor` other than 1.
 */
function readScaling(reader: FieldReader, field: string, value: unknown): RopeScaling | null {
  if (value === null || value === undefined) return null;
  if (!isPlainObject(value)) reader.fail(field, value, 'an object or null');
  const entry = value as Record<string, unknown>;
  const type = entry.rope_type ?? entry.type ?? 'default';
  if (entry.partial_rotary_factor != null && entry.partial_rotary_factor !== 1) {
    reader.fail(`${field}.partial_rotary_factor`, entry.partial_rotary_factor, '1 or absent');
  }
  if (type === 'default') return null;
  if (type === 'linear') {
    return {
      rope_type: 'linear',
      factor: finiteNumber(reader, `${field}.factor`, entry.factor, 0),
    };
  }
  if (type === 'llama3') {
    const factor = finiteNumber(reader, `${field}.factor`, entry.factor, 0);
    const low = finiteNumber(reader, `${field}.low_freq_factor`, entry.low_freq_factor, 0);
    const high = finiteNumber(reader, `${field}.high_freq_factor`, entry.high_freq_factor, 0);
    if (high <= low) {
      reader.fail(`${field}.high_freq_factor`, high, `a number > low_freq_factor (${low})`);
    }
    const context = entry.original_max_position_embeddings;
    if (typeof context !== 'number' || !Number.isInteger(context) || context < 1) {
      reader.fail(`${field}.original_max_position_embeddings`, context, 'a positive integer');
    }
    return {
      rope_type: 'llama3',
      factor,
      low_freq_factor: low,
      high_freq_factor: high,
      original_max_position_embeddings: context as number,
    };
  }
  return reader.fail(
    `${field}.rope_type`,
    type,
    "'default', 'linear' or 'llama3' (other RoPE scaling kinds are not implemented)",
  );
}

/**
 * Reads `rope_theta` + `rope_scaling` (transformers 4) or `rope_parameters` (transformers 5: one
 * flat entry, or `full_attention` / `sliding_attention` entries for Gemma 3). With `local` (Gemma
 * 3), also the sliding layers' θ from `rope_local_base_freq` or `rope_parameters.sliding_attention`,
 * whose RoPE must be plain. A config with both `rope_scaling` and `rope_parameters` is refused
 * unless they say the same. @internal
 */
export function readRopeFields(
  raw: Record<string, unknown>,
  reader: FieldReader,
  defaults: { theta: number; localTheta?: number },
): RopeFields {
  const parameters = raw.rope_parameters;
  if (parameters == null) {
    const theta = reader.positiveNumber('rope_theta', defaults.theta);
    const scaling = readScaling(reader, 'rope_scaling', raw.rope_scaling);
    if (defaults.localTheta === undefined) return { theta, scaling };
    const localTheta = reader.positiveNumber('rope_local_base_freq', defaults.localTheta);
    return { theta, scaling, localTheta };
  }
  if (!isPlainObject(parameters)) reader.fail('rope_parameters', parameters, 'an object or null');
  const perLayerType = 'full_attention' in parameters || 'sliding_attention' in parameters;
  const fullField = perLayerType ? 'rope_parameters.full_attention' : 'rope_parameters';
  const full = (perLayerType ? parameters.full_attention : parameters) ?? {};
  if (!isPlainObject(full)) reader.fail(fullField, full, 'an object');
  const fullEntry = full as Record<string, unknown>;
  const theta = finiteNumber(
    reader,
    `${fullField}.rope_theta`,
    fullEntry.rope_theta ?? raw.rope_theta ?? defaults.theta,
    0,
  );
  const scaling = readScaling(reader, fullField, fullEntry);
  if (raw.rope_scaling != null) {
    const legacy = readScaling(reader, 'rope_scaling', raw.rope_scaling);
    if (JSON.stringify(legacy) !== JSON.stringify(scaling)) {
      reader.fail('rope_scaling', raw.rope_scaling, `null or the same scaling as ${fullField}`);
    }
  }
  if (defaults.localTheta === undefined) {
    if (perLayerType && parameters.sliding_attention != null) {
      reader.fail(
        'rope_parameters.sliding_attention',
        parameters.sliding_attention,
        'absent (this model type has no sliding-window layers)',
      );
    }
    return { theta, scaling };
  }
  const sliding = (perLayerType ? parameters.sliding_attention : undefined) ?? {};
  if (!isPlainObject(sliding)) {
    reader.fail('rope_parameters.sliding_attention', sliding, 'an object');
  }
  const slidingEntry = sliding as Record<string, unknown>;
  if (readScaling(reader, 'rope_parameters.sliding_attention', slidingEntry) !== null) {
    reader.fail(
      'rope_parameters.sliding_attention.rope_type',
      slidingEntry.rope_type ?? slidingEntry.type,
      "'default' (sliding-window layers use plain RoPE)",
    );
  }
  const localTheta = finiteNumber(
    reader,
    'rope_parameters.sliding_attention.rope_theta',
    slidingEntry.rope_theta ?? raw.rope_local_base_freq ?? defaults.localTheta,
    0,
  );
  return { theta, scaling, localTheta };
}
