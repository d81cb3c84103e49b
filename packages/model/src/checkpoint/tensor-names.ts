import { type LlamaConfig, llamaBiases } from '../config/llama-config.js';

/** A tensor's Hugging Face name and row-major shape. */
export type TensorSpec = { name: string; shape: number[] };

/**
 * The Hugging Face tensor names and shapes of a Llama-family model, in a fixed order (embedding,
 * then each layer, then the final norm and `lm_head` unless tied). Linear weights are stored
 * `[out_features, in_features]` as in PyTorch.
 *
 * @example
 * ```ts
 * llamaTensorSpecs(config)[1]; // { name: 'model.layers.0.self_attn.q_proj.weight', shape: [64, 64] }
 * ```
 */
export function llamaTensorSpecs(config: LlamaConfig): TensorSpec[] {
  const h = config.hidden_size;
  const qWidth = config.num_attention_heads * config.head_dim;
  const kvWidth = config.num_key_value_heads * config.head_dim;
  const m = config.intermediate_size;
  const biases = llamaBiases(config);
  const specs: TensorSpec[] = [
    { name: 'model.embed_tokens.weight', shape: [config.vocab_size, h] },
  ];
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const prefix = `model.layers.${layer}`;
    specs.push({ name: `${prefix}.self_attn.q_proj.weight`, shape: [qWidth, h] });
    if (biases.qkv) specs.push({ name: `${prefix}.self_attn.q_proj.bias`, shape: [qWidth] });
    specs.push({ name: `${prefix}.self_attn.k_proj.weight`, shape: [kvWidth, h] });
    if (biases.qkv) specs.push({ name: `${prefix}.self_attn.k_proj.bias`, shape: [kvWidth] });
    specs.push({ name: `${prefix}.self_attn.v_proj.weight`, shape: [kvWidth, h] });
    if (biases.qkv) specs.push({ name: `${prefix}.self_attn.v_proj.bias`, shape: [kvWidth] });
    specs.push({ name: `${prefix}.self_attn.o_proj.weight`, shape: [h, qWidth] });
    if (biases.o) specs.push({ name: `${prefix}.self_attn.o_proj.bias`, shape: [h] });
    specs.push({ name: `${prefix}.mlp.gate_proj.weight`, shape: [m, h] });
    specs.push({ name: `${prefix}.mlp.up_proj.weight`, shape: [m, h] });
    specs.push({ name: `${prefix}.mlp.down_proj.weight`, shape: [h, m] });
    specs.push({ name: `${prefix}.input_layernorm.weight`, shape: [h] });
    specs.push({ name: `${prefix}.post_attention_layernorm.weight`, shape: [h] });
  }
  specs.push({ name: 'model.norm.weight', shape: [h] });
  if (!config.tie_word_embeddings) {
    specs.push({ name: 'lm_head.weight', shape: [config.vocab_size, h] });
  }
  return specs;
}

/**
 * The Hugging Face tensor names of a Llama-family model, in {@link llamaTensorSpecs} order.
 *
 * @example
 * ```ts
 * llamaTensorNames(config).includes('model.layers.0.mlp.gate_proj.weight'); // true
 * ```
 */
export function llamaTensorNames(config: LlamaConfig): string[] {
  return llamaTensorSpecs(config).map((spec) => spec.name);
}
