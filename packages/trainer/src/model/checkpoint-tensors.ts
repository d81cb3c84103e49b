import { InvalidArgumentError, type NamedTensor, ShapeMismatchError } from '@rlvr/core';
import { type Checkpoint, type LlamaConfig, llamaBiases } from '@rlvr/model';

/**
 * A checkpoint's tensors checked against a config: every name the config has, with its Hugging
 * Face shape and float32 data, nothing else; optionally every value finite. Returns them by name
 * in the config's order (the data as given, not copied). @internal
 */
export function validatedTensors(
  config: LlamaConfig,
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
export function expectedShapes(config: LlamaConfig): Map<string, number[]> {
  const h = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const m = config.intermediate_size;
  const { qkv: qkvBias, o: oBias } = llamaBiases(config);
  const shapes = new Map<string, number[]>([['model.embed_tokens.weight', [config.vocab_size, h]]]);
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const prefix = `model.layers.${layer}`;
    shapes.set(`${prefix}.self_attn.q_proj.weight`, [q, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.q_proj.bias`, [q]);
    shapes.set(`${prefix}.self_attn.k_proj.weight`, [kv, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.k_proj.bias`, [kv]);
    shapes.set(`${prefix}.self_attn.v_proj.weight`, [kv, h]);
    if (qkvBias) shapes.set(`${prefix}.self_attn.v_proj.bias`, [kv]);
    shapes.set(`${prefix}.self_attn.o_proj.weight`, [h, q]);
    if (oBias) shapes.set(`${prefix}.self_attn.o_proj.bias`, [h]);
    shapes.set(`${prefix}.mlp.gate_proj.weight`, [m, h]);
    shapes.set(`${prefix}.mlp.up_proj.weight`, [m, h]);
    shapes.set(`${prefix}.mlp.down_proj.weight`, [h, m]);
    shapes.set(`${prefix}.input_layernorm.weight`, [h]);
    shapes.set(`${prefix}.post_attention_layernorm.weight`, [h]);
  }
  shapes.set('model.norm.weight', [h]);
  if (!config.tie_word_embeddings) shapes.set('lm_head.weight', [config.vocab_size, h]);
  return shapes;
}
