import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  InvalidArgumentError,
  type NamedTensor,
  OverwriteRefusedError,
  ShapeMismatchError,
  validateOptions,
} from '@rlvr/core';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { validateCheckpoint } from '../checkpoint/checkpoint.js';
import { ModelLoadError } from '../errors/model-load-error.js';
import { syncDirectory, writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { inspectTarget, type Ownership, swapInFolder } from '../io/replace-folder.js';
import { readSafetensors, writeSafetensors } from '../safetensors/safetensors.js';

/** The files of a PEFT adapter folder (`PeftModel.save_pretrained`). */
export const LORA_ADAPTER_FILES = {
  config: 'adapter_config.json',
  weights: 'adapter_model.safetensors',
} as const;

/** The projections of a Llama/Qwen2 layer a LoRA adapter may target (PEFT module names). */
export const LORA_TARGET_MODULES = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;

/**
 * A LoRA adapter's settings, in PEFT's `LoraConfig` terms (`r`, `lora_alpha`, `lora_dropout`,
 * `target_modules`, `use_rslora`, `base_model_name_or_path`).
 */
export type LoraAdapterConfig = {
  r: number;
  alpha: number;
  dropout: number;
  /** PEFT module names (`q_proj`, …), in {@link LORA_TARGET_MODULES} order. */
  targetModules: string[];
  /** rsLoRA: the scale is α / √r instead of α / r. */
  rslora: boolean;
  /** `base_model_name_or_path` (a Hub id or a folder), or null. */
  baseModel: string | null;
};

/**
 * A LoRA adapter: settings and tensors with PEFT's names
 * (`base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight` `[r, in]`, `lora_B.weight`
 * `[out, r]`), loadable by PEFT (`PeftModel.from_pretrained`) and vLLM (`--lora-modules`).
 */
export type LoraAdapter = { config: LoraAdapterConfig; tensors: NamedTensor[] };

/** The scale of an adapter's output: α / r (α / √r with rsLoRA). */
export function loraScale(config: Pick<LoraAdapterConfig, 'r' | 'alpha' | 'rslora'>): number {
  return config.rslora ? config.alpha / Math.sqrt(config.r) : config.alpha / config.r;
}

const ADAPTER_NAME =
  /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+_proj)\.lora_(A|B)\.weight$/;

/** PEFT's `adapter_config.json` for `config` (LoRA on a causal LM, inference mode). */
function peftConfig(config: LoraAdapterConfig): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: config.baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: config.alpha,
    lora_dropout: config.dropout,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    r: config.r,
    rank_pattern: {},
    revision: null,
    target_modules: [...config.targetModules],
    task_type: 'CAUSAL_LM',
    use_dora: false,
    use_rslora: config.rslora,
  };
}

const OWNERSHIP: Ownership = {
  top: (name) => name === LORA_ADAPTER_FILES.config || name === LORA_ADAPTER_FILES.weights,
  folders: {},
};

/**
 * Writes a LoRA adapter as PEFT does (`adapter_config.json` + `adapter_model.safetensors`, F32)
 * into `dir`, atomically. `dir` must be new, empty or an adapter folder this function wrote
 * (its two files are replaced; nothing else is touched); anything else is refused with
 * `OverwriteRefusedError` before anything is written.
 *
 * @example
 * ```ts
 * await saveLoraAdapter('runs/math/adapter', model.toLoraAdapter()!);
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for a malformed adapter;
 * `OverwriteRefusedError` (`WOULD_OVERWRITE`) for a foreign target.
 */
export async function saveLoraAdapter(dir: string, adapter: LoraAdapter): Promise<void> {
  const functionName = 'saveLoraAdapter';
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName,
      value: dir,
      expected: 'a folder path',
    });
  }
  validateAdapter(adapter, functionName);
  const target = resolve(dir);
  const state = await inspectTarget(target);
  if (state === 'not-a-folder') {
    throw new OverwriteRefusedError({
      path: target,
      reason: 'it is a file, not an adapter folder',
      functionName,
    });
  }
  if (state === 'folder') {
    const existing = await readFile(join(target, LORA_ADAPTER_FILES.config), 'utf8').catch(
      () => undefined,
    );
    if (existing === undefined) {
      throw new OverwriteRefusedError({
        path: target,
        reason: `the folder is not empty and is not a LoRA adapter (no ${LORA_ADAPTER_FILES.config}); choose an empty or new folder`,
        functionName,
      });
    }
  }
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const temporary = join(parent, `.${basename(target)}.tmp-${suffix}`);
  await mkdir(temporary);
  try {
    await writeSafetensors(join(temporary, LORA_ADAPTER_FILES.weights), adapter.tensors, {
      dtype: 'F32',
    });
    const text = `${JSON.stringify(peftConfig(adapter.config), null, 2)}\n`;
    await writeFileAtomic(join(temporary, LORA_ADAPTER_FILES.config), async (handle) => {
      await writeAll(handle, new TextEncoder().encode(text), 0);
    });
    await syncDirectory(temporary);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await swapInFolder({
    target,
    temporary,
    parent,
    aside: join(parent, `.${basename(target)}.old-${suffix}`),
    owned: OWNERSHIP,
  });
}

/** PEFT settings this loader does not implement: refused by name, never silently ignored. */
function refuseUnsupported(raw: Record<string, unknown>, path: string): void {
  const refuse = (field: string, value: unknown, reason: string) => {
    throw new ModelLoadError({
      path,
      reason: `'${field}' is ${JSON.stringify(value)}: ${reason}`,
    });
  };
  if (raw.peft_type !== 'LORA') refuse('peft_type', raw.peft_type, "only 'LORA' adapters load");
  if (raw.use_dora === true) refuse('use_dora', true, 'DoRA is not implemented');
  if (raw.fan_in_fan_out === true) refuse('fan_in_fan_out', true, 'only nn.Linear layouts (false)');
  if (raw.bias !== undefined && raw.bias !== 'none') refuse('bias', raw.bias, "only 'none'");
  for (const field of ['rank_pattern', 'alpha_pattern'] as const) {
    const value = raw[field];
    if (value !== undefined && value !== null && Object.keys(value as object).length > 0) {
      refuse(field, value, 'per-module ranks and alphas are not implemented');
    }
  }
  for (const field of ['layers_to_transform', 'modules_to_save', 'layer_replication'] as const) {
    if (raw[field] !== undefined && raw[field] !== null)
      refuse(field, raw[field], 'not implemented');
  }
}

/**
 * Reads a PEFT LoRA adapter folder (`adapter_config.json` + `adapter_model.safetensors`, any float
 * dtype). PEFT settings this package does not implement (DoRA, `fan_in_fan_out`, biases,
 * per-module ranks, `modules_to_save`, …) are refused by name.
 * @throws {ModelLoadError} (`MODEL_LOAD_FAILED`) naming the file and what is wrong.
 */
export async function loadLoraAdapter(dir: string): Promise<LoraAdapter> {
  const configPath = join(resolve(dir), LORA_ADAPTER_FILES.config);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ModelLoadError({ path: configPath, reason: 'cannot read it as JSON', cause: error });
  }
  refuseUnsupported(raw, configPath);
  const targets = raw.target_modules;
  const all = targets === 'all-linear' ? [...LORA_TARGET_MODULES] : targets;
  if (
    !Array.isArray(all) ||
    all.some((m) => !(LORA_TARGET_MODULES as readonly string[]).includes(m))
  ) {
    throw new ModelLoadError({
      path: configPath,
      reason: `'target_modules' ${JSON.stringify(targets)}: expected names among ${LORA_TARGET_MODULES.join(', ')}`,
    });
  }
  const number = (field: string, fallback: number) => {
    const value = raw[field] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new ModelLoadError({
        path: configPath,
        reason: `'${field}' is ${JSON.stringify(value)}, not a number`,
      });
    }
    return value;
  };
  const config: LoraAdapterConfig = {
    r: number('r', 8),
    alpha: number('lora_alpha', 8),
    dropout: number('lora_dropout', 0),
    targetModules: LORA_TARGET_MODULES.filter((m) => all.includes(m)),
    rslora: raw.use_rslora === true,
    baseModel: typeof raw.base_model_name_or_path === 'string' ? raw.base_model_name_or_path : null,
  };
  const weightsPath = join(resolve(dir), LORA_ADAPTER_FILES.weights);
  const { tensors } = await readSafetensors(weightsPath);
  try {
    validateAdapter({ config, tensors }, 'loadLoraAdapter');
  } catch (error) {
    throw new ModelLoadError({
      path: weightsPath,
      reason: error instanceof Error ? error.message : String(error),
      cause: error,
    });
  }
  return { config, tensors };
}

/** Checks names (PEFT's), ranks and that each targeted projection has both matrices. */
function validateAdapter(adapter: LoraAdapter, functionName: string): void {
  if (adapter === null || typeof adapter !== 'object' || !Array.isArray(adapter.tensors)) {
    throw new InvalidArgumentError({
      parameter: 'adapter',
      functionName,
      value: adapter,
      expected: 'a LoraAdapter { config, tensors }',
    });
  }
  validateOptions(adapter.config, {
    parameter: 'adapter.config',
    functionName,
    known: ['r', 'alpha', 'dropout', 'targetModules', 'rslora', 'baseModel'],
  });
  const { r } = adapter.config;
  const seen = new Map<string, Set<string>>();
  for (const tensor of adapter.tensors) {
    const match = ADAPTER_NAME.exec(tensor.name);
    if (!match || !adapter.config.targetModules.includes(match[3]!)) {
      throw new InvalidArgumentError({
        parameter: `adapter.tensors['${tensor.name}']`,
        functionName,
        value: tensor.name,
        expected: `a PEFT name of a targeted projection (base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight; targets ${adapter.config.targetModules.join(', ')})`,
      });
    }
    const which = match[4]!;
    const rankAxis = which === 'A' ? 0 : 1;
    if (
      tensor.shape.length !== 2 ||
      tensor.shape[rankAxis] !== r ||
      tensor.data.length !== tensor.shape[0]! * tensor.shape[1]!
    ) {
      throw new ShapeMismatchError({
        parameter: `adapter.tensors['${tensor.name}']`,
        functionName,
        expected: which === 'A' ? `[${r}, in]` : `[out, ${r}]`,
        actual: `[${tensor.shape.join(', ')}] with ${tensor.data.length} values`,
      });
    }
    const key = `${match[1]}.${match[3]}`;
    seen.set(key, (seen.get(key) ?? new Set()).add(which));
  }
  for (const [key, kinds] of seen) {
    if (kinds.size !== 2) {
      throw new InvalidArgumentError({
        parameter: 'adapter.tensors',
        functionName,
        value: key,
        expected: `both lora_A and lora_B of layer ${key.replace('.', ' ')}`,
      });
    }
  }
}

/**
 * The checkpoint with the adapter merged into it: `W + s·B·A` for every adapted projection
 * (s = α / r, or α / √r with rsLoRA), PEFT's `merge_and_unload`; the other tensors are shared
 * with `checkpoint` (not copied). Export the result as safetensors, ONNX or GGUF.
 *
 * @example
 * ```ts
 * const merged = mergeLora(await loadCheckpoint('base'), await loadLoraAdapter('runs/adapter'));
 * await saveCheckpoint('merged', merged);
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} when the adapter does not fit the
 * checkpoint (a layer or projection it lacks, other dimensions).
 */
export function mergeLora(checkpoint: Checkpoint, adapter: LoraAdapter): Checkpoint {
  const functionName = 'mergeLora';
  const valid = validateCheckpoint(checkpoint, { functionName, checkFinite: false });
  validateAdapter(adapter, functionName);
  const scale = loraScale(adapter.config);
  const { r } = adapter.config;
  const pairs = new Map<string, { a?: NamedTensor; b?: NamedTensor }>();
  for (const tensor of adapter.tensors) {
    const match = ADAPTER_NAME.exec(tensor.name)!;
    const base = `model.layers.${match[1]}.${match[2]}.${match[3]}.weight`;
    const pair = pairs.get(base) ?? {};
    if (match[4] === 'A') pair.a = tensor;
    else pair.b = tensor;
    pairs.set(base, pair);
  }
  const byName = new Map(valid.tensors.map((tensor) => [tensor.name, tensor]));
  for (const [name, { a, b }] of pairs) {
    const weight = byName.get(name);
    if (!weight) {
      throw new InvalidArgumentError({
        parameter: `adapter.tensors['${a!.name}']`,
        functionName,
        value: name,
        expected: 'a projection of the checkpoint',
      });
    }
    const [out, input] = weight.shape as [number, number];
    if (a!.shape[1] !== input || b!.shape[0] !== out) {
      throw new ShapeMismatchError({
        parameter: `adapter.tensors['${a!.name}']`,
        functionName,
        expected: `A [${r}, ${input}] and B [${out}, ${r}] for ${name} [${out}, ${input}]`,
        actual: `A [${a!.shape.join(', ')}], B [${b!.shape.join(', ')}]`,
      });
    }
  }
  const tensors = valid.tensors.map((tensor) => {
    const pair = pairs.get(tensor.name);
    if (!pair) return tensor;
    const [out, input] = tensor.shape as [number, number];
    const data = Float32Array.from(tensor.data);
    const a = pair.a!.data;
    const b = pair.b!.data;
    for (let row = 0; row < out; row++) {
      const target = row * input;
      for (let k = 0; k < r; k++) {
        const coefficient = scale * b[row * r + k]!;
        if (coefficient === 0) continue;
        const source = k * input;
        for (let col = 0; col < input; col++) data[target + col]! += coefficient * a[source + col]!;
      }
    }
    return { name: tensor.name, shape: [...tensor.shape], data };
  });
  return { ...valid, tensors };
}
