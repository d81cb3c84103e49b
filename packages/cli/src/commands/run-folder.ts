import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, OverwriteRefusedError } from '@rlvr/core';
import {
  type Checkpoint,
  type LoraAdapter,
  loadLoraAdapter,
  saveCheckpoint,
  saveLoraAdapter,
} from '@rlvr/model';
import { formatConfig, type ResolvedConfig } from '../config/load-config.js';
import { ConfigError } from '../errors/config-error.js';

/** The resolved config a run wrote into its folder (the run page shows it). */
export const RUN_CONFIG_FILE = 'rlvr-config.yaml';
/** The final model a training run saves into its folder. */
export const RUN_MODEL_DIR = 'model';

/** The `outputDir` of a training config (required, a string). */
export function outputDirOf(config: ResolvedConfig): string {
  const dir = config.values.outputDir;
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new ConfigError({
      key: 'outputDir',
      source: config.origins.get('outputDir') ?? config.file,
      message: 'required: the folder for metrics, checkpoints and the final model',
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  return dir;
}

/**
 * Refuses, before anything runs, a run folder whose final model or config file exists from an
 * earlier run, unless `--overwrite` (replace) or `--resume` (continue).
 */
export function checkRunFolder(
  dir: string,
  options: { overwrite: boolean; resume: boolean },
): void {
  if (options.overwrite || options.resume) return;
  for (const name of [RUN_MODEL_DIR, RUN_CONFIG_FILE]) {
    const path = join(dir, name);
    if (existsSync(path)) {
      throw new OverwriteRefusedError({
        path,
        reason: 'it holds the output of an earlier run',
        allowWith: '--overwrite (replace) or --resume (continue)',
      });
    }
  }
}

/** Writes the resolved config of the run (`rlvr-config.yaml`) into the run folder. */
export async function writeRunConfig(
  dir: string,
  command: string,
  config: ResolvedConfig,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const header = `# rlvr ${command}: the resolved config of this run${config.file ? ` (from ${config.file})` : ''}\n`;
  await writeFile(
    join(dir, RUN_CONFIG_FILE),
    `${header}command: ${command}\n${formatConfig(config.values)}`,
  );
}

/**
 * Saves the trained model as `<dir>/model` (a Hugging Face-style checkpoint folder) and, for a
 * LoRA run, its adapter as `<dir>/adapter` (PEFT's files; `model/` holds the merged weights).
 */
export async function saveRunModel(
  dir: string,
  checkpoint: Checkpoint,
  adapter?: LoraAdapter,
): Promise<string> {
  const path = join(dir, RUN_MODEL_DIR);
  await saveCheckpoint(path, checkpoint);
  if (adapter) await saveLoraAdapter(join(dir, RUN_ADAPTER_DIR), adapter);
  return path;
}

/** The run folder's LoRA adapter (PEFT files), beside `model/`. */
export const RUN_ADAPTER_DIR = 'adapter';

/**
 * A config's `lora` with `adapter` given as a folder (a PEFT adapter: `adapter_config.json` +
 * `adapter_model.safetensors`) read into the adapter `createPolicyTrainer` takes; else as it is.
 */
export async function resolveLoraConfig(lora: unknown): Promise<unknown> {
  if (lora === null || typeof lora !== 'object') return lora;
  const { adapter } = lora as { adapter?: unknown };
  if (typeof adapter !== 'string') return lora;
  return { ...lora, adapter: await loadLoraAdapter(adapter) };
}
