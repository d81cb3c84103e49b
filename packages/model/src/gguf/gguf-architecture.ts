import { InvalidArgumentError } from '@rlvr/core';
import type { LayerArchitecture, ModelArchitecture } from '../config/architecture.js';
import { modelArchitecture } from '../config/architecture.js';
import type { ModelConfig, ModelType } from '../config/model-config.js';
import { ropeInverseFrequencies } from '../config/rope.js';
import type { GgufEntry } from './gguf-encode.js';
import { GgufValueType } from './gguf-format.js';

/** llama.cpp's architecture name per family. @internal */
export const GGUF_ARCHITECTURE: Record<ModelType, string> = {
  llama: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  gemma3_text: 'gemma3',
  smollm3: 'smollm3',
};

/**
 * Families whose llama.cpp architecture rotates adjacent pairs (`LLAMA_ROPE_TYPE_NORM`): their q/k
 * rows are permuted from Hugging Face's rotate-half layout (`convert_hf_to_gguf.py`'s `permute`).
 * The others (qwen2, qwen3, gemma3) are NEOX: rotate-half, no permutation.
 */
const ADJACENT_PAIRS = new Set<ModelType>(['llama', 'smollm3']);

/** What the writer does with one Hugging Face tensor. @internal */
export type GgufTensorPlan = {
  /** llama.cpp's tensor name. */
  name: string;
  /** Permute q/k rows (and biases) within each head for `heads` heads. */
  permuteHeads?: number;
  /** Value added to every element (Gemma's `(1 + w)` norms are stored as `1 + w`). */
  shift?: number;
  /** Factor on every element after the shift (the attention-scale fold into Gemma's q norm). */
  scale?: number;
};

/** A tensor llama.cpp needs that the checkpoint does not store (Llama 3's `rope_freqs`). @internal */
export type GgufExtraTensor = { name: string; data: Float32Array };

/** How a checkpoint becomes a GGUF file under its family's llama.cpp architecture. @internal */
export type GgufFamilyPlan = {
  architecture: string;
  metadata: [string, GgufEntry][];
  /** Hugging Face name → plan. */
  tensors: Map<string, GgufTensorPlan>;
  extra: GgufExtraTensor[];
};

const u32 = (value: number): GgufEntry => ({ type: GgufValueType.UINT32, value });
const f32 = (value: number): GgufEntry => ({ type: GgufValueType.FLOAT32, value });

function unsupported(functionName: string, field: string, value: unknown, expected: string): never {
  throw new InvalidArgumentError({
    parameter: `checkpoint.config.${field}`,
    functionName,
    value,
    expected,
  });
}

/** The period `p` of llama.cpp's `set_swa_pattern` (layer `i` sliding iff `i % p < p − 1`), if any. */
function slidingPattern(arch: ModelArchitecture): number | undefined {
  const sliding = arch.layers.map((layer) => layer.window !== null);
  const count = sliding.length;
  for (let period = 0; period <= count + 1; period++) {
    const matches = sliding.every((value, index) =>
      period === 0 ? value : value === index % period < period - 1,
    );
    if (matches) return period;
  }
  return undefined;
}

/** Gemma 3's llama.cpp settings: window, pattern, local θ, and the attention-scale fold factor. */
function gemmaMetadata(
  config: ModelConfig,
  arch: ModelArchitecture,
  prefix: string,
  functionName: string,
): { entries: [string, GgufEntry][]; qScale: number } {
  const entries: [string, GgufEntry][] = [];
  const windows = new Set(arch.layers.map((layer) => layer.window).filter((w) => w !== null));
  if (windows.size > 0) {
    const pattern = slidingPattern(arch);
    if (pattern === undefined) {
      unsupported(
        functionName,
        'layer_types',
        config.layer_types,
        "a periodic pattern (llama.cpp's gemma3 writes one sliding_window_pattern period: layer i is sliding iff i % p < p − 1)",
      );
    }
    entries.push([`${prefix}.attention.sliding_window`, u32(config.sliding_window as number)]);
    entries.push([`${prefix}.attention.sliding_window_pattern`, u32(pattern)]);
    entries.push([`${prefix}.rope.freq_base_swa`, f32(config.rope_local_base_freq as number)]);
  }
  // llama.cpp's gemma3 scales queries by 1/√head_dim (1/√(hidden/heads) for 62 layers, the 27B
  // rule) whatever query_pre_attn_scalar says: fold the difference into the q norm weights.
  const llamaCppScale =
    arch.layers.length === 62
      ? 1 / Math.sqrt(Math.trunc(arch.hiddenSize / arch.heads))
      : 1 / Math.sqrt(arch.headDim);
  return { entries, qScale: arch.attentionScale / llamaCppScale };
}

/** Llama 3's `rope_freqs.weight`: the per-frequency divisor llama.cpp applies (`f_plain / f_scaled`). */
function ropeFreqs(arch: ModelArchitecture): GgufExtraTensor[] {
  const rope = arch.layers.find((layer) => layer.rope.kind === 'rotary')?.rope;
  if (rope?.kind !== 'rotary' || rope.scaling?.rope_type !== 'llama3') return [];
  const plain = ropeInverseFrequencies(rope.theta, arch.headDim, null);
  const data = Float32Array.from(plain, (f, i) => f / (rope.inverseFrequencies[i] as number));
  return [{ name: 'rope_freqs.weight', data }];
}

function layerTensors(
  layer: LayerArchitecture,
  arch: ModelArchitecture,
  permute: boolean,
  shift: number,
  qScale: number,
): [string, GgufTensorPlan][] {
  const block = `blk.${layer.index}`;
  const plans: [string, GgufTensorPlan][] = [];
  const projection = (hf: string, gguf: string, heads?: number) => {
    for (const suffix of ['weight', 'bias']) {
      plans.push([
        `${hf}.${suffix}`,
        {
          name: `${block}.${gguf}.${suffix}`,
          ...(permute && heads ? { permuteHeads: heads } : {}),
        },
      ]);
    }
  };
  projection(layer.q, 'attn_q', arch.heads);
  projection(layer.k, 'attn_k', arch.kvHeads);
  projection(layer.v, 'attn_v');
  projection(layer.o, 'attn_output');
  projection(layer.gate, 'ffn_gate');
  projection(layer.up, 'ffn_up');
  projection(layer.down, 'ffn_down');
  const norm = (hf: string | null, gguf: string, scale = 1) => {
    if (hf) plans.push([hf, { name: `${block}.${gguf}.weight`, shift, scale }]);
  };
  norm(layer.attentionNorm, 'attn_norm');
  norm(layer.qNorm, 'attn_q_norm', qScale);
  norm(layer.kNorm, 'attn_k_norm');
  norm(layer.attentionOutputNorm, 'post_attention_norm');
  norm(layer.mlpNorm, 'ffn_norm');
  norm(layer.mlpOutputNorm, 'post_ffw_norm');
  return plans;
}

/**
 * The llama.cpp architecture of a checkpoint's family, its hyperparameter metadata and the name
 * and transform of every tensor (llama.cpp's `convert_hf_to_gguf.py` conventions), from
 * {@link modelArchitecture}. Refuses, naming the field, what llama.cpp's architecture cannot
 * express. `permute: false` skips the q/k row permutation (tests only). @internal
 */
export function ggufFamilyPlan(
  config: ModelConfig,
  options: { permute: boolean; functionName: string },
): GgufFamilyPlan {
  const { functionName } = options;
  const arch = modelArchitecture(config);
  const family = arch.modelType;
  const architecture = GGUF_ARCHITECTURE[family];
  if (family === 'qwen2' && arch.headDim * arch.heads !== arch.hiddenSize) {
    unsupported(
      functionName,
      'head_dim',
      arch.headDim,
      `hidden_size / num_attention_heads (${arch.hiddenSize / arch.heads}) for qwen2: llama.cpp's qwen2 architecture has no separate head width`,
    );
  }
  const scaling = config.rope_scaling;
  if (scaling?.rope_type === 'llama3' && family !== 'llama') {
    unsupported(
      functionName,
      'rope_scaling.rope_type',
      'llama3',
      `'linear' or none for ${family} (llama.cpp reads rope_freqs only for the llama architecture)`,
    );
  }
  if (family === 'smollm3') {
    const expected = arch.layers.map((layer) => ((layer.index + 1) % 4 === 0 ? 0 : 1));
    if (JSON.stringify(config.no_rope_layers) !== JSON.stringify(expected)) {
      unsupported(
        functionName,
        'no_rope_layers',
        config.no_rope_layers,
        "no RoPE on every 4th layer (llama.cpp's smollm3 fixes n_no_rope_layer_step = 4)",
      );
    }
  }
  const p = architecture;
  const metadata: [string, GgufEntry][] = [
    [`${p}.vocab_size`, u32(arch.vocabSize)],
    [`${p}.context_length`, u32(config.max_position_embeddings)],
    [`${p}.embedding_length`, u32(arch.hiddenSize)],
    [`${p}.block_count`, u32(arch.layers.length)],
    [`${p}.feed_forward_length`, u32(arch.intermediateSize)],
    [`${p}.attention.head_count`, u32(arch.heads)],
    [`${p}.attention.head_count_kv`, u32(arch.kvHeads)],
    [`${p}.attention.key_length`, u32(arch.headDim)],
    [`${p}.attention.value_length`, u32(arch.headDim)],
    [`${p}.rope.dimension_count`, u32(arch.headDim)],
    [`${p}.rope.freq_base`, f32(config.rope_theta)],
    [`${p}.attention.layer_norm_rms_epsilon`, f32(arch.normEps)],
  ];
  if (scaling?.rope_type === 'linear') {
    metadata.push([`${p}.rope.scaling.type`, { type: GgufValueType.STRING, value: 'linear' }]);
    metadata.push([`${p}.rope.scaling.factor`, f32(scaling.factor)]);
  }
  let qScale = 1;
  if (family === 'gemma3_text') {
    const gemma = gemmaMetadata(config, arch, p, functionName);
    metadata.push(...gemma.entries);
    qScale = gemma.qScale;
  }
  const permute = options.permute && ADJACENT_PAIRS.has(family);
  const shift = arch.normOffset;
  const tensors = new Map<string, GgufTensorPlan>([
    [arch.embedding, { name: 'token_embd.weight' }],
    [arch.finalNorm, { name: 'output_norm.weight', shift }],
  ]);
  if (!arch.tiedEmbeddings) tensors.set(arch.lmHead, { name: 'output.weight' });
  for (const layer of arch.layers) {
    for (const [name, plan] of layerTensors(layer, arch, permute, shift, qScale)) {
      tensors.set(name, plan);
    }
  }
  return { architecture, metadata, tensors, extra: ropeFreqs(arch) };
}
