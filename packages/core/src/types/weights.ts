/** One named tensor in row-major order, e.g. `model.layers.0.self_attn.q_proj.weight`. */
export type NamedTensor = { name: string; shape: number[]; data: Float32Array };

/**
 * New policy weights, pushed from the trainer to a {@link Sampler} after an optimizer step.
 * Tensor names follow Hugging Face's Llama naming (see @rlvr/model).
 */
export type WeightSnapshot = {
  /** Optimizer step that produced these weights. */
  step: number;
  tensors: NamedTensor[];
};
