/**
 * RoPE scaling as Hugging Face's `config.json` writes it (`rope_scaling`, or the `rope_parameters`
 * of transformers 5), resolved: only the kinds this package implements everywhere (float64
 * reference, ONNX, GGUF). `null` means plain RoPE (`rope_type: 'default'`).
 *
 * - `linear`: every inverse frequency divided by `factor` (Gemma 3 4B+ global layers).
 * - `llama3`: Llama 3.1/3.2's band-wise rule (transformers' `_compute_llama3_parameters`): long
 *   wavelengths (`2π / f > original_max_position_embeddings / low_freq_factor`) divided by
 *   `factor`, short ones (`< original_max_position_embeddings / high_freq_factor`) kept, the band
 *   between interpolated smoothly.
 */
export type RopeScaling =
  | { rope_type: 'linear'; factor: number }
  | {
      rope_type: 'llama3';
      factor: number;
      low_freq_factor: number;
      high_freq_factor: number;
      original_max_position_embeddings: number;
    };

/** The RoPE scaling kinds {@link RopeScaling} covers. */
export const ROPE_SCALING_TYPES = ['linear', 'llama3'] as const;

/**
 * Inverse frequencies `f_i = θ^(−2i/d)` (`i < d/2`) with `scaling` applied, in float64: the angle of
 * pair `i` at position `p` is `p · f_i` (Hugging Face's rotate-half layout pairs `i` and `i + d/2`).
 *
 * @example
 * ```ts
 * ropeInverseFrequencies(10000, 4, null); // [1, 0.01]
 * ```
 */
export function ropeInverseFrequencies(
  theta: number,
  headDim: number,
  scaling: RopeScaling | null,
): number[] {
  const half = headDim / 2;
  const base = Array.from({ length: half }, (_, i) => theta ** ((-2 * i) / headDim));
  if (scaling === null) return base;
  if (scaling.rope_type === 'linear') return base.map((f) => f / scaling.factor);
  const { factor, low_freq_factor: low, high_freq_factor: high } = scaling;
  const context = scaling.original_max_position_embeddings;
  const lowWavelength = context / low;
  const highWavelength = context / high;
  return base.map((f) => {
    const wavelength = (2 * Math.PI) / f;
    if (wavelength < highWavelength) return f;
    if (wavelength > lowWavelength) return f / factor;
    const smooth = (context / wavelength - low) / (high - low);
    return (1 - smooth) * (f / factor) + smooth * f;
  });
}
