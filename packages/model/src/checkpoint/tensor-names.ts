import { modelArchitecture } from '../config/architecture.js';
import type { ModelConfig } from '../config/model-config.js';

/** A tensor's Hugging Face name and row-major shape. */
export type TensorSpec = { name: string; shape: number[] };

/**
 * The Hugging Face tensor names and shapes of a model of any family ({@link modelArchitecture}), in
 * a fixed order (embedding, then each layer, then the final norm and `lm_head` unless tied). Linear
 * weights are stored `[out_features, in_features]` as in PyTorch; q/k norms are `[head_dim]`.
 *
 * @example
 * ```ts
 * llamaTensorSpecs(config)[1]; // { name: 'model.layers.0.self_attn.q_proj.weight', shape: [64, 64] }
 * ```
 */
export function llamaTensorSpecs(config: ModelConfig): TensorSpec[] {
  const arch = modelArchitecture(config);
  const h = arch.hiddenSize;
  const qWidth = arch.heads * arch.headDim;
  const kvWidth = arch.kvHeads * arch.headDim;
  const m = arch.intermediateSize;
  const { biases } = arch;
  const specs: TensorSpec[] = [{ name: arch.embedding, shape: [arch.vocabSize, h] }];
  for (const layer of arch.layers) {
    const projection = (name: string, out: number, input: number, bias: boolean) => {
      specs.push({ name: `${name}.weight`, shape: [out, input] });
      if (bias) specs.push({ name: `${name}.bias`, shape: [out] });
    };
    projection(layer.q, qWidth, h, biases.qkv);
    projection(layer.k, kvWidth, h, biases.qkv);
    projection(layer.v, kvWidth, h, biases.qkv);
    projection(layer.o, h, qWidth, biases.o);
    if (layer.qNorm) specs.push({ name: layer.qNorm, shape: [arch.headDim] });
    if (layer.kNorm) specs.push({ name: layer.kNorm, shape: [arch.headDim] });
    projection(layer.gate, m, h, false);
    projection(layer.up, m, h, false);
    projection(layer.down, h, m, false);
    specs.push({ name: layer.attentionNorm, shape: [h] });
    if (layer.attentionOutputNorm) specs.push({ name: layer.attentionOutputNorm, shape: [h] });
    specs.push({ name: layer.mlpNorm, shape: [h] });
    if (layer.mlpOutputNorm) specs.push({ name: layer.mlpOutputNorm, shape: [h] });
  }
  specs.push({ name: arch.finalNorm, shape: [h] });
  if (!arch.tiedEmbeddings) specs.push({ name: arch.lmHead, shape: [arch.vocabSize, h] });
  return specs;
}

/**
 * The Hugging Face tensor names of a model, in {@link llamaTensorSpecs} order.
 *
 * @example
 * ```ts
 * llamaTensorNames(config).includes('model.layers.0.mlp.gate_proj.weight'); // true
 * ```
 */
export function llamaTensorNames(config: ModelConfig): string[] {
  return llamaTensorSpecs(config).map((spec) => spec.name);
}
