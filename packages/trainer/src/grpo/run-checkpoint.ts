import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, type NamedTensor, RlvrError, type RngState } from '@rlvr/core';
import {
  type Checkpoint,
  encodeSafetensors,
  loadCheckpoint,
  readSafetensors,
  saveCheckpoint,
} from '@rlvr/model';
import type { AdamWState } from '../optim/adamw.js';

/** Everything besides the weights that a GRPO run needs to continue exactly. @internal */
export type RunState = {
  format: 'rlvr-grpo-run-v1';
  /** Generation steps completed. */
  step: number;
  /** Updates skipped by the policy trainer (non-finite). */
  skippedSteps: number;
  /** State of the loop's random generator (sampler seeds). */
  rng: RngState;
  /** Data position: epoch and index into that epoch's shuffled order. */
  cursor: { epoch: number; position: number };
  /** Byte lengths of the JSONL logs at this step (longer logs are cut back on resume). */
  files: { metricsBytes: number; completionsBytes: number };
  /** Cumulative counters (skips, tokens). */
  counters: Record<string, number>;
  /** Mean entropy of the first step (for the entropy-collapse diagnostic). */
  initialEntropy: number | null;
  datasetSize: number;
};

/** What one run checkpoint holds. @internal */
export type RunCheckpoint = {
  model: Checkpoint;
  reference?: Checkpoint;
  optimizer: AdamWState;
  state: RunState;
};

const STEP_DIR = /^step-(\d+)$/;
const STATE_FILE = 'state.json';
const OPTIMIZER_FILE = 'optimizer.safetensors';

async function writeDurable(path: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems cannot fsync a directory; the rename is still atomic.
  } finally {
    await handle.close();
  }
}

/** The folder name of the checkpoint of `step` (zero-padded so names sort by step). @internal */
export function checkpointName(step: number): string {
  return `step-${String(step).padStart(8, '0')}`;
}

/**
 * Writes a run checkpoint atomically: everything goes into a temporary sibling folder (fsynced),
 * `state.json` last, then one rename makes it visible; a crash leaves only a `.tmp-*` folder that
 * {@link listCheckpoints} ignores and the next save removes. Keeps the newest `keepLast`. @internal
 */
export async function saveRunCheckpoint(
  root: string,
  checkpoint: RunCheckpoint,
  keepLast: number,
): Promise<string> {
  await mkdir(root, { recursive: true });
  await removeTemporary(root);
  const name = checkpointName(checkpoint.state.step);
  const temporary = join(root, `.tmp-${name}-${process.pid}-${Date.now()}`);
  const final = join(root, name);
  try {
    await mkdir(temporary);
    await saveCheckpoint(join(temporary, 'model'), checkpoint.model);
    if (checkpoint.reference)
      await saveCheckpoint(join(temporary, 'reference'), checkpoint.reference);
    const tensors: NamedTensor[] = [];
    for (const moment of checkpoint.optimizer.moments) {
      tensors.push({ name: `${moment.name}#m`, shape: moment.shape, data: moment.m });
      tensors.push({ name: `${moment.name}#v`, shape: moment.shape, data: moment.v });
    }
    if (tensors.length > 0) {
      await writeDurable(join(temporary, OPTIMIZER_FILE), encodeSafetensors(tensors));
    }
    const state = { ...checkpoint.state, optimizerStep: checkpoint.optimizer.step };
    await writeDurable(
      join(temporary, STATE_FILE),
      new TextEncoder().encode(`${JSON.stringify(state, null, 2)}\n`),
    );
    await syncDirectory(temporary);
    await rm(final, { recursive: true, force: true });
    await rename(temporary, final);
    await syncDirectory(root);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  const all = await listCheckpoints(root);
  for (const old of all.slice(0, Math.max(0, all.length - keepLast))) {
    await rm(old.path, { recursive: true, force: true });
  }
  return final;
}

/** Complete checkpoints under `root`, oldest first. @internal */
export async function listCheckpoints(root: string): Promise<{ step: number; path: string }[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const out: { step: number; path: string }[] = [];
  for (const name of names) {
    const match = STEP_DIR.exec(name);
    if (!match) continue;
    const path = join(root, name);
    try {
      await stat(join(path, STATE_FILE));
    } catch {
      continue;
    }
    out.push({ step: Number(match[1]), path });
  }
  return out.sort((a, b) => a.step - b.step);
}

async function removeTemporary(root: string): Promise<void> {
  for (const name of await readdir(root)) {
    if (name.startsWith('.tmp-')) await rm(join(root, name), { recursive: true, force: true });
  }
}

/** Reads a checkpoint written by {@link saveRunCheckpoint}. @internal */
export async function loadRunCheckpoint(path: string): Promise<RunCheckpoint> {
  let raw: RunState & { optimizerStep: number };
  try {
    raw = JSON.parse(await readFile(join(path, STATE_FILE), 'utf8'));
  } catch (error) {
    throw new RlvrError(ErrorCode.MODEL_LOAD_FAILED, `Cannot read the run state in ${path}`, {
      cause: error,
    });
  }
  if (raw?.format !== 'rlvr-grpo-run-v1') {
    throw new RlvrError(
      ErrorCode.MODEL_LOAD_FAILED,
      `${join(path, STATE_FILE)} is not a GRPO run state (format ${JSON.stringify(raw?.format)})`,
    );
  }
  const model = await loadCheckpoint(join(path, 'model'));
  let reference: Checkpoint | undefined;
  try {
    await stat(join(path, 'reference'));
    reference = await loadCheckpoint(join(path, 'reference'));
  } catch (error) {
    if (RlvrError.isInstance(error)) throw error;
  }
  const moments: AdamWState['moments'] = [];
  if (raw.optimizerStep > 0) {
    const { tensors } = await readSafetensors(join(path, OPTIMIZER_FILE));
    const byName = new Map(tensors.map((tensor) => [tensor.name, tensor]));
    for (const tensor of tensors) {
      if (!tensor.name.endsWith('#m')) continue;
      const name = tensor.name.slice(0, -2);
      moments.push({
        name,
        shape: tensor.shape,
        m: tensor.data,
        v: byName.get(`${name}#v`)!.data,
      });
    }
  }
  const { optimizerStep, ...state } = raw;
  return {
    model,
    ...(reference ? { reference } : {}),
    optimizer: { step: optimizerStep, moments },
    state,
  };
}
