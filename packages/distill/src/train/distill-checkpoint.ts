import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  ErrorCode,
  InvalidArgumentError,
  type NamedTensor,
  OverwriteRefusedError,
  RlvrError,
} from '@rlvr/core';
import {
  type Checkpoint,
  encodeSafetensors,
  loadCheckpoint,
  readSafetensors,
  saveCheckpoint,
} from '@rlvr/model';
import type { PolicyTrainer, PolicyTrainerState } from '@rlvr/trainer';
import type { DistillStepRecord } from './distill-options.js';

const FORMAT = 'rlvr-distill-v1';
/** The entries a distillation checkpoint folder holds (nothing else is ever deleted). */
const ENTRIES = new Set(['model', 'optimizer.safetensors', 'state.json']);

/** What a folder holds, as far as distillation checkpoints are concerned. @internal */
export type CheckpointFolderKind = 'missing' | 'empty' | 'checkpoint' | 'foreign';

/**
 * `missing`: no such path; `empty`: an empty folder; `checkpoint`: a distillation checkpoint and
 * nothing else; `foreign`: anything else (a file, user files, another tool's checkpoint). @internal
 */
export async function inspectCheckpointFolder(dir: string): Promise<CheckpointFolderKind> {
  if (!existsSync(dir)) return 'missing';
  if (!(await stat(dir)).isDirectory()) return 'foreign';
  const entries = await readdir(dir);
  if (entries.length === 0) return 'empty';
  if (!entries.every((entry) => ENTRIES.has(entry))) return 'foreign';
  try {
    const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as {
      format?: unknown;
    };
    return state.format === FORMAT ? 'checkpoint' : 'foreign';
  } catch {
    return 'foreign';
  }
}

/** What {@link loadDistillCheckpoint} returns: build the student from `checkpoint`, then resume. */
export type DistillCheckpoint = {
  /** The student's weights (and config). */
  checkpoint: Checkpoint;
  /** Pass to `PolicyTrainer.setState` (optimizer moments, counters). */
  trainerState: PolicyTrainerState;
  /** Pass as `distillStudent({ resumeFrom })`. */
  resumeFrom: DistillStepRecord['position'];
  /** The training history up to the checkpoint. */
  history: DistillStepRecord[];
  /** The settings `distillStudent` saved to check a resume against (absent in older checkpoints). */
  settings?: Record<string, unknown>;
};

/**
 * Writes the student's weights, the optimizer state and the data position to `dir`, atomically:
 * everything goes to a fresh sibling temporary folder that then replaces `dir` by rename, so a
 * crash leaves either the old or the new checkpoint, never a mix. `dir` must be missing, empty, or
 * a distillation checkpoint (holding nothing else); any other folder is refused and left as it is.
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` when `dir` holds anything but a checkpoint.
 */
export async function saveDistillCheckpoint(
  dir: string,
  trainer: PolicyTrainer,
  history: readonly DistillStepRecord[],
  options: { settings?: Record<string, unknown> } = {},
): Promise<void> {
  const last = history.at(-1);
  if (!last) {
    throw new InvalidArgumentError({
      parameter: 'history',
      functionName: 'saveDistillCheckpoint',
      value: history,
      expected: 'at least one finished step',
    });
  }
  const kind = await inspectCheckpointFolder(dir);
  if (kind === 'foreign') {
    throw new OverwriteRefusedError({
      path: dir,
      reason: 'it exists and is not a distillation checkpoint (nothing in it is deleted)',
      functionName: 'saveDistillCheckpoint',
    });
  }
  await mkdir(dirname(dir), { recursive: true });
  const temporary = await mkdtemp(join(dirname(dir), `.${basename(dir)}.tmp-`));
  try {
    await writeCheckpointFiles(temporary, trainer, history, options.settings);
    if (kind === 'checkpoint' || kind === 'empty') {
      // Only a folder this function's format owns (or an empty one) is replaced.
      const previous = `${temporary}.old`;
      await rename(dir, previous);
      await rename(temporary, dir);
      await rm(previous, { recursive: true, force: true });
    } else {
      await rename(temporary, dir);
    }
  } catch (error) {
    if (existsSync(temporary)) await rm(temporary, { recursive: true, force: true });
    throw error;
  }
}

async function writeCheckpointFiles(
  folder: string,
  trainer: PolicyTrainer,
  history: readonly DistillStepRecord[],
  settings: Record<string, unknown> | undefined,
): Promise<void> {
  await saveCheckpoint(join(folder, 'model'), trainer.model.toCheckpoint());
  const state = trainer.getState();
  const tensors: NamedTensor[] = state.optimizer.moments.flatMap((moment) => [
    { name: `${moment.name}.m`, shape: moment.shape, data: moment.m },
    { name: `${moment.name}.v`, shape: moment.shape, data: moment.v },
  ]);
  await writeFile(join(folder, 'optimizer.safetensors'), encodeSafetensors(tensors));
  const consecutiveSkips = (state as { consecutiveSkips?: number }).consecutiveSkips;
  await writeFile(
    join(folder, 'state.json'),
    JSON.stringify({
      format: FORMAT,
      optimizerStep: state.optimizer.step,
      ...(state.optimizer.layout ? { optimizerLayout: state.optimizer.layout } : {}),
      skippedSteps: state.skippedSteps,
      ...(consecutiveSkips === undefined ? {} : { consecutiveSkips }),
      moments: state.optimizer.moments.map((moment) => ({
        name: moment.name,
        shape: moment.shape,
      })),
      history,
      ...(settings === undefined ? {} : { settings }),
    }),
  );
}

/**
 * Reads a checkpoint written during `distillStudent({ checkpoint })`.
 * @throws {RlvrError} `MODEL_LOAD_FAILED` when it is missing or malformed.
 */
export async function loadDistillCheckpoint(dir: string): Promise<DistillCheckpoint> {
  try {
    const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as {
      format: string;
      optimizerStep: number;
      optimizerLayout?: 'hf' | 'in-out';
      skippedSteps: number;
      moments: { name: string; shape: number[] }[];
      history: DistillStepRecord[];
      consecutiveSkips?: number;
      settings?: Record<string, unknown>;
    };
    if (state.format !== FORMAT) throw new Error(`unknown format ${JSON.stringify(state.format)}`);
    const checkpoint = await loadCheckpoint(join(dir, 'model'));
    const optimizer = await readSafetensors(join(dir, 'optimizer.safetensors'));
    const tensor = (name: string) => {
      const found = optimizer.tensors.find((entry) => entry.name === name);
      if (!found) throw new Error(`optimizer.safetensors lacks ${name}`);
      return found.data;
    };
    const last = state.history.at(-1);
    if (!last) throw new Error('the checkpoint has no finished step');
    return {
      checkpoint,
      trainerState: {
        skippedSteps: state.skippedSteps,
        ...(state.consecutiveSkips === undefined
          ? {}
          : { consecutiveSkips: state.consecutiveSkips }),
        optimizer: {
          step: state.optimizerStep,
          ...(state.optimizerLayout ? { layout: state.optimizerLayout } : {}),
          moments: state.moments.map((moment) => ({
            ...moment,
            m: tensor(`${moment.name}.m`),
            v: tensor(`${moment.name}.v`),
          })),
        },
      },
      resumeFrom: last.position,
      history: state.history,
      ...(state.settings === undefined ? {} : { settings: state.settings }),
    };
  } catch (error) {
    if (RlvrError.isInstance(error)) throw error;
    throw new RlvrError(
      ErrorCode.MODEL_LOAD_FAILED,
      `Could not load the distillation checkpoint in ${dir}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
