import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ErrorCode,
  type NamedTensor,
  OverwriteRefusedError,
  RlvrError,
  type RngState,
} from '@rlvr/core';
import {
  type Checkpoint,
  encodeSafetensors,
  type LoraAdapter,
  loadCheckpoint,
  loadLoraAdapter,
  readSafetensors,
  saveCheckpoint,
  saveLoraAdapter,
} from '@rlvr/model';
import type { AdamWState } from '../optim/adamw.js';

/** The format tag of `state.json`. @internal */
export const RUN_STATE_FORMAT = 'rlvr-grpo-run-v2';

/** Everything besides the weights that a GRPO run needs to continue exactly. @internal */
export type RunState = {
  format: typeof RUN_STATE_FORMAT;
  /** Identifies the run (kept across resumes); pruning touches only checkpoints of this id. */
  runId: string;
  /** Generation steps completed. */
  step: number;
  /** Updates skipped by the policy trainer (non-finite). */
  skippedSteps: number;
  /** Skipped updates since the last applied one (the `maxConsecutiveSkips` counter). */
  consecutiveSkips: number;
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
  /** `fingerprint(settings)`. */
  fingerprint: string;
  /** Everything that changes the math (see `runSettings`), compared on resume. */
  settings: Record<string, unknown>;
};

/** What one run checkpoint holds. @internal */
export type RunCheckpoint = {
  /** The trained weights (full fine-tuning). */
  model?: Checkpoint;
  /** LoRA: the adapter (PEFT's files in `adapter/`); the base is the run's model, unchanged. */
  adapter?: LoraAdapter;
  reference?: Checkpoint;
  optimizer: AdamWState;
  state: RunState;
};

/** A complete checkpoint found on disk. @internal */
export type CheckpointEntry = { step: number; path: string; runId: string | undefined };

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

/** Prefix of this run's temporary folders (only those are ever cleaned up). */
function temporaryPrefix(runId: string): string {
  return `.tmp-${runId}-`;
}

async function readState(path: string): Promise<Partial<RunState> | undefined> {
  try {
    const value = JSON.parse(await readFile(join(path, STATE_FILE), 'utf8')) as unknown;
    return value !== null && typeof value === 'object' ? (value as Partial<RunState>) : undefined;
  } catch {
    return undefined;
  }
}

async function writeContents(temporary: string, checkpoint: RunCheckpoint): Promise<void> {
  await mkdir(temporary);
  if (checkpoint.model) await saveCheckpoint(join(temporary, 'model'), checkpoint.model);
  if (checkpoint.adapter) await saveLoraAdapter(join(temporary, 'adapter'), checkpoint.adapter);
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
  const state = {
    ...checkpoint.state,
    optimizerStep: checkpoint.optimizer.step,
    ...(checkpoint.optimizer.layout ? { optimizerLayout: checkpoint.optimizer.layout } : {}),
  };
  await writeDurable(
    join(temporary, STATE_FILE),
    new TextEncoder().encode(`${JSON.stringify(state, null, 2)}\n`),
  );
  await syncDirectory(temporary);
}

/**
 * Writes a run checkpoint atomically: everything goes into a temporary sibling folder (fsynced),
 * `state.json` last, then one rename makes it visible; a crash leaves only a `.tmp-<runId>-*`
 * folder that {@link listCheckpoints} ignores and the next save of the same run removes. A
 * checkpoint folder of the same step is replaced only when it belongs to the same run. Then the
 * newest `keepLast` checkpoints *of this run* are kept; nothing else is ever removed. @internal
 * @throws {OverwriteRefusedError} when `step-N` exists and is not this run's checkpoint.
 */
export async function saveRunCheckpoint(
  root: string,
  checkpoint: RunCheckpoint,
  keepLast: number,
): Promise<string> {
  const { runId } = checkpoint.state;
  await mkdir(root, { recursive: true });
  for (const name of await readdir(root)) {
    if (name.startsWith(temporaryPrefix(runId))) await rm(join(root, name), { recursive: true });
  }
  const name = checkpointName(checkpoint.state.step);
  const final = join(root, name);
  const existing = await readState(final);
  const occupied = await readdir(final).then(
    () => true,
    () => false,
  );
  if (occupied && existing?.runId !== runId) {
    throw new OverwriteRefusedError({
      path: final,
      reason: 'it exists and is not a checkpoint of this run',
      functionName: 'GrpoTrainer.saveCheckpoint',
    });
  }
  const stamp = `${process.pid}-${Date.now()}`;
  const temporary = join(root, `${temporaryPrefix(runId)}${name}-${stamp}`);
  try {
    await writeContents(temporary, checkpoint);
    if (occupied) {
      const aside = join(root, `${temporaryPrefix(runId)}old-${name}-${stamp}`);
      await rename(final, aside);
      await rename(temporary, final);
      await rm(aside, { recursive: true, force: true });
    } else {
      await rename(temporary, final);
    }
    await syncDirectory(root);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  const mine = (await listCheckpoints(root)).filter((entry) => entry.runId === runId);
  for (const old of mine.slice(0, Math.max(0, mine.length - keepLast))) {
    await rm(old.path, { recursive: true, force: true });
  }
  return final;
}

/** Complete checkpoints (a `step-N` folder with a readable `state.json`) under `root`, oldest first. @internal */
export async function listCheckpoints(root: string): Promise<CheckpointEntry[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const out: CheckpointEntry[] = [];
  for (const name of names) {
    const match = STEP_DIR.exec(name);
    if (!match) continue;
    const path = join(root, name);
    const state = await readState(path);
    if (state === undefined) continue;
    out.push({
      step: Number(match[1]),
      path,
      runId: typeof state.runId === 'string' ? state.runId : undefined,
    });
  }
  return out.sort((a, b) => a.step - b.step);
}

/** True when `path` holds a readable run checkpoint `state.json`. @internal */
export async function isRunCheckpoint(path: string): Promise<boolean> {
  return (await readState(path))?.format === RUN_STATE_FORMAT;
}

/** Reads a checkpoint written by {@link saveRunCheckpoint}. @internal */
export async function loadRunCheckpoint(path: string): Promise<RunCheckpoint> {
  let raw: RunState & { optimizerStep: number; optimizerLayout?: 'hf' | 'in-out' };
  try {
    raw = JSON.parse(await readFile(join(path, STATE_FILE), 'utf8'));
  } catch (error) {
    throw new RlvrError(ErrorCode.MODEL_LOAD_FAILED, `Cannot read the run state in ${path}`, {
      cause: error,
    });
  }
  if (raw?.format !== RUN_STATE_FORMAT) {
    throw new RlvrError(
      ErrorCode.MODEL_LOAD_FAILED,
      `${join(path, STATE_FILE)} is not a GRPO run state of format ${RUN_STATE_FORMAT} (format ${JSON.stringify(raw?.format)})`,
    );
  }
  const exists = (name: string) =>
    readdir(join(path, name)).then(
      () => true,
      () => false,
    );
  const adapter = (await exists('adapter'))
    ? await loadLoraAdapter(join(path, 'adapter'))
    : undefined;
  const model = adapter ? undefined : await loadCheckpoint(join(path, 'model'));
  const reference = (await readdir(join(path, 'reference')).then(
    () => true,
    () => false,
  ))
    ? await loadCheckpoint(join(path, 'reference'))
    : undefined;
  const moments: AdamWState['moments'] = [];
  if (raw.optimizerStep > 0) {
    const { tensors } = await readSafetensors(join(path, OPTIMIZER_FILE));
    const byName = new Map(tensors.map((tensor) => [tensor.name, tensor]));
    for (const tensor of tensors) {
      if (!tensor.name.endsWith('#m')) continue;
      const name = tensor.name.slice(0, -2);
      moments.push({ name, shape: tensor.shape, m: tensor.data, v: byName.get(`${name}#v`)!.data });
    }
  }
  const { optimizerStep, optimizerLayout, ...state } = raw;
  return {
    ...(model ? { model } : {}),
    ...(adapter ? { adapter } : {}),
    ...(reference ? { reference } : {}),
    optimizer: {
      step: optimizerStep,
      moments,
      ...(optimizerLayout ? { layout: optimizerLayout } : {}),
    },
    state,
  };
}
