/**
 * The memory plan of a trainer on the native engine: the resident bytes of the training process
 * by part, from the model config and the trainer options, before anything is allocated. The
 * activations depend on the micro-batch (tokens = rows × row length), so the plan also gives the
 * bytes per token with kept and with recomputed activations, which the trainer uses to choose
 * checkpointing (`gradientCheckpointing: 'auto'`) and to size micro-batches (`microBatchTokens`).
 * The constants are this engine's, measured (see the trainer README's memory table).
 */
import { MemoryLimitError } from '@rlvr/core';
import { type ModelConfig, parseModelConfig } from '@rlvr/model';
import type { LoraModule } from '../native/layer-graph.js';
import { moduleShape } from '../native/layer-graph.js';
import { layerSpecOf, storeSlots } from '../native/param-store.js';
import {
  type PolicyTrainerOptions,
  type ResolvedTrainerOptions,
  resolveTrainerOptions,
} from './trainer-options.js';

/** The parts of a {@link MemoryPlan} (bytes). */
export type MemoryParts = {
  /** The model's weights (frozen base with LoRA). */
  weights: number;
  /** Gradients of what trains (the model, or the adapters). */
  gradients: number;
  /** AdamW's two moments of what trains. */
  optimizer: number;
  /** LoRA adapters' weights. */
  adapters: number;
  /** The frozen reference policy (β > 0 without LoRA: a copy of the weights; with LoRA: none). */
  reference: number;
  /** Activations of one micro-batch (kept ones, or the layer inputs with recomputation). */
  activations: number;
  /** onnxruntime's working memory of the largest session run (one layer's backward, a head chunk). */
  workspace: number;
  /** Node.js, onnxruntime and the sessions themselves. */
  runtime: number;
};

/** What {@link planMemory} returns. */
export type MemoryPlan = {
  /** Estimated resident bytes by part. */
  parts: MemoryParts;
  /** Their sum. */
  totalBytes: number;
  /** The limit compared against (`memoryLimitBytes`, default `os.totalmem()`). */
  limitBytes: number;
  /** Whether `totalBytes` ≤ `limitBytes`. */
  fits: boolean;
  /** Whether activations are recomputed (what `'auto'` chose, or what was asked). */
  gradientCheckpointing: boolean;
  /** Tokens of the planned micro-batch (rows × row length). */
  microBatchTokens: number;
  /** The largest micro-batch (tokens) that fits, with kept and with recomputed activations (0: none). */
  maxMicroBatchTokens: { kept: number; recomputed: number };
  /** Settings that would fit when `fits` is false (e.g. `lora: { r: 16 }`), else empty. */
  fitsWith: string[];
};

/** Bytes of Node.js, onnxruntime and its sessions (measured: ~250 MB before any tensor). */
const RUNTIME_BYTES = 300 * 2 ** 20;
/** Elements of one logits-sized tensor of a head chunk (the engine's chunk size). */
const HEAD_CHUNK_ELEMENTS = 4 * 1024 * 1024;

type Shape = ReturnType<typeof layerSpecOf> & { layers: number; vocab: number };

function shapeOf(config: ModelConfig): Shape {
  return {
    ...layerSpecOf(config),
    layers: config.num_hidden_layers,
    vocab: config.vocab_size,
  };
}

/** Parameters of the model and of its adapters. */
function parameterCounts(config: ModelConfig, lora: ResolvedTrainerOptions['lora']) {
  const model = storeSlots(config).reduce((sum, slot) => sum + slot.size, 0);
  if (!lora) return { model, adapters: 0 };
  const spec = layerSpecOf(config);
  const perLayer = lora.targetModules.reduce((sum, module: LoraModule) => {
    const [out, input] = moduleShape(spec, module);
    return sum + lora.r * (out + input);
  }, 0);
  return { model, adapters: perLayer * config.num_hidden_layers };
}

/**
 * Bytes per token of one micro-batch of row length `rowLength`: kept activations (all layers),
 * the layer inputs with recomputation, and the working memory of the largest session run.
 */
function perToken(shape: Shape, rowLength: number) {
  const q = shape.heads * shape.headDim;
  const kv = shape.kvHeads * shape.headDim;
  const d = shape.hidden;
  // attention probabilities per token: heads × row length
  const attention = shape.heads * rowLength;
  const cachePerLayer = 2 * d + q + 2 * kv + q + 2 * shape.ffn + attention;
  return {
    kept: 4 * shape.layers * (cachePerLayer + d),
    recomputed: 4 * shape.layers * d,
    // one layer's backward (its forward recomputed): the MLP's and attention's intermediates
    workspace: 4 * (10 * d + 3 * (q + 2 * kv) + 8 * shape.ffn + 4 * attention),
  };
}

/**
 * The memory plan of training a model of `config` with `options` (the options of
 * `createPolicyTrainer`) on the native engine, for micro-batches of `microBatchTokens` tokens
 * (rows × row length; default the options' `microBatchTokens`, else 2,048) of row length
 * `rowLength` (default 512). Reads nothing, allocates nothing.
 *
 * @example
 * ```ts
 * const plan = planMemory(config, { lora: { r: 16, targetModules: 'all-linear' } });
 * if (!plan.fits) console.log(plan.fitsWith);
 * ```
 * @throws {InvalidArgumentError} for an invalid config or options (as `createPolicyTrainer`).
 */
export function planMemory(
  config: ModelConfig | Record<string, unknown>,
  options?: PolicyTrainerOptions & { rowLength?: number },
): MemoryPlan {
  const functionName = 'planMemory';
  const { rowLength, ...trainerOptions } = options ?? {};
  const parsed = parseModelConfig(config);
  const resolved = resolveTrainerOptions(trainerOptions, functionName);
  return planResolved(parsed, resolved, {
    tokens: resolved.microBatchTokens ?? 2048,
    rowLength: rowLength ?? 512,
  });
}

/** {@link planMemory} on resolved options. @internal */
export function planResolved(
  config: ModelConfig,
  options: ResolvedTrainerOptions,
  batch: { tokens: number; rowLength: number },
): MemoryPlan {
  const shape = shapeOf(config);
  const counts = parameterCounts(config, options.lora);
  const trained = options.lora ? counts.adapters : counts.model;
  const fixed = {
    weights: 4 * counts.model,
    gradients: 4 * trained,
    optimizer: 8 * trained,
    adapters: 4 * counts.adapters,
    reference: options.grpo.beta > 0 && !options.lora ? 4 * counts.model : 0,
    runtime: RUNTIME_BYTES,
  };
  const staticBytes = Object.values(fixed).reduce((a, b) => a + b, 0);
  const per = perToken(shape, Math.min(batch.rowLength, batch.tokens));
  // the head: a chunk's logits-sized tensors and, training the base, a layer's gradient outputs
  const largestLayerSlot = Math.max(
    ...storeSlots(config)
      .filter((slot) => slot.key.startsWith('layers.'))
      .map((slot) => slot.size),
  );
  const chunk = Math.min(HEAD_CHUNK_ELEMENTS, batch.tokens * shape.vocab);
  const headBytes = 4 * 6 * chunk + (options.lora ? 0 : 8 * largestLayerSlot);
  const room = options.memoryLimitBytes - staticBytes - headBytes;
  const maxTokens = (bytes: number) => (room <= 0 ? 0 : Math.floor(room / bytes));
  const maxMicroBatchTokens = {
    kept: maxTokens(per.kept + per.workspace),
    recomputed: maxTokens(per.recomputed + per.workspace),
  };
  const keptFits = batch.tokens <= maxMicroBatchTokens.kept;
  const recompute =
    options.gradientCheckpointing === 'auto' ? !keptFits : options.gradientCheckpointing;
  const activations = batch.tokens * (recompute ? per.recomputed : per.kept);
  const workspace = batch.tokens * per.workspace + headBytes;
  const parts: MemoryParts = { ...fixed, activations, workspace };
  const totalBytes = Object.values(parts).reduce((a, b) => a + b, 0);
  const fits = totalBytes <= options.memoryLimitBytes;
  return {
    parts,
    totalBytes,
    limitBytes: options.memoryLimitBytes,
    fits,
    gradientCheckpointing: recompute,
    microBatchTokens: batch.tokens,
    maxMicroBatchTokens,
    fitsWith: fits ? [] : suggestions(config, options, batch, maxMicroBatchTokens),
  };
}

/** Settings that would make the planned micro-batch fit (each checked against the plan). */
function suggestions(
  config: ModelConfig,
  options: ResolvedTrainerOptions,
  batch: { tokens: number; rowLength: number },
  max: MemoryPlan['maxMicroBatchTokens'],
): string[] {
  const out: string[] = [];
  const fits = (changed: ResolvedTrainerOptions) => planResolved(config, changed, batch).fits;
  if (options.gradientCheckpointing !== true && fits({ ...options, gradientCheckpointing: true })) {
    out.push('gradientCheckpointing: true');
  }
  // smaller micro-batches help only when the micro-batch has several rows
  const rows = Math.floor(batch.tokens / batch.rowLength);
  if (rows > 1 && max.recomputed >= batch.rowLength && max.recomputed < batch.tokens) {
    out.push(`microBatchTokens: ${max.recomputed} (with gradientCheckpointing)`);
  }
  if (!options.lora) {
    const lora = { r: 16, alpha: 16, dropout: 0, targetModules: [...ALL], rslora: false, seed: 0 };
    if (fits({ ...options, lora, gradientCheckpointing: 'auto' })) {
      out.push("lora: { r: 16, targetModules: 'all-linear' }");
    }
  }
  if (
    options.grpo.beta > 0 &&
    !options.lora &&
    fits({ ...options, grpo: { ...options.grpo, beta: 0 } })
  ) {
    out.push('grpo.beta: 0 (no reference model)');
  }
  const needed = planResolved(
    config,
    { ...options, gradientCheckpointing: 'auto', memoryLimitBytes: Number.MAX_SAFE_INTEGER },
    batch,
  );
  const smallest = planResolved(
    config,
    { ...options, gradientCheckpointing: true, memoryLimitBytes: Number.MAX_SAFE_INTEGER },
    batch,
  );
  out.push(
    `memoryLimitBytes ≥ ${Math.ceil(Math.min(needed.totalBytes, smallest.totalBytes) / 2 ** 20)} MiB`,
  );
  return out;
}

const ALL: LoraModule[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

const millions = (count: number) => `${(count / 1e6).toFixed(count < 1e7 ? 2 : 0)}M`;

/**
 * Refuses a trainer whose static parts (weights, gradients, optimizer, reference, runtime) and
 * the smallest micro-batch do not fit its memory limit. @internal
 */
export function assertStaticFit(
  config: ModelConfig,
  options: ResolvedTrainerOptions,
  functionName: string,
): MemoryPlan {
  const plan = planResolved(config, options, {
    tokens: options.microBatchTokens ?? 256,
    rowLength: 256,
  });
  if (plan.maxMicroBatchTokens.recomputed >= Math.min(plan.microBatchTokens, 64)) return plan;
  throw new MemoryLimitError({
    what: `training this ${config.model_type} model (${millions(parameterCounts(config, undefined).model)} parameters${options.lora ? `, LoRA r ${options.lora.r}` : ', full fine-tuning'})`,
    parts: plan.parts,
    limitBytes: plan.limitBytes,
    limitName: options.memoryLimitName,
    fitsWith: plan.fitsWith,
    functionName,
  });
}

/**
 * The memory decisions of a trainer's steps on the native engine: the token budget of its
 * micro-batches and, per micro-batch, whether its activations are kept or recomputed; a
 * micro-batch that cannot fit even with recomputation is a `MemoryLimitError` before the step's
 * first forward. @internal
 */
export class StepMemory {
  constructor(
    readonly config: ModelConfig,
    readonly options: ResolvedTrainerOptions,
  ) {}

  /** The token budget of micro-batches of rows up to `rowLength` tokens. */
  budget(rowLength: number): number {
    if (this.options.microBatchTokens !== undefined) return this.options.microBatchTokens;
    const plan = planResolved(this.config, this.options, { tokens: rowLength, rowLength });
    return Math.max(plan.maxMicroBatchTokens.recomputed, rowLength);
  }

  /** Kept or recomputed activations for a micro-batch of `rows` × `rowLength` tokens. */
  keep(rows: number, rowLength: number, functionName: string): 'cache' | 'recompute' {
    const tokens = rows * rowLength;
    const plan = planResolved(this.config, this.options, { tokens, rowLength });
    if (!plan.fits) {
      throw new MemoryLimitError({
        what: `a micro-batch of ${rows} × ${rowLength} tokens`,
        parts: plan.parts,
        limitBytes: plan.limitBytes,
        limitName: this.options.memoryLimitName,
        fitsWith: plan.fitsWith,
        functionName,
      });
    }
    return plan.gradientCheckpointing ? 'recompute' : 'cache';
  }
}
