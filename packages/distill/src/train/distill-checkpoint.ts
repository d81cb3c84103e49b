import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ErrorCode, InvalidArgumentError, type NamedTensor, RlvrError } from '@rlvr/core';
import {
  type Checkpoint,
  encodeSafetensors,
  loadCheckpoint,
  readSafetensors,
  saveCheckpoint,
} from '@rlvr/model';
import type { PolicyTrainer, PolicyTrainerState } from '@rlvr/trainer';
import type { DistillStepRecord } from './distill-student.js';

const FORMAT = 'rlvr-distill-v1';

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
};

/**
 * Writes the student's weights, the optimizer state and the data position to `dir`, atomically:
 * everything goes to a sibling temporary folder that then replaces `dir` by rename, so a crash
 * leaves either the old or the new checkpoint, never a mix.
 */
export async function saveDistillCheckpoint(
  dir: string,
  trainer: PolicyTrainer,
  history: readonly DistillStepRecord[],
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
  const temporary = `${dir}.tmp-${process.pid}`;
  await rm(temporary, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await saveCheckpoint(join(temporary, 'model'), trainer.model.toCheckpoint());
  const state = trainer.getState();
  const tensors: NamedTensor[] = state.optimizer.moments.flatMap((moment) => [
    { name: `${moment.name}.m`, shape: moment.shape, data: moment.m },
    { name: `${moment.name}.v`, shape: moment.shape, data: moment.v },
  ]);
  await writeFile(join(temporary, 'optimizer.safetensors'), encodeSafetensors(tensors));
  await writeFile(
    join(temporary, 'state.json'),
    JSON.stringify({
      format: FORMAT,
      optimizerStep: state.optimizer.step,
      skippedSteps: state.skippedSteps,
      moments: state.optimizer.moments.map((moment) => ({
        name: moment.name,
        shape: moment.shape,
      })),
      history,
    }),
  );
  const previous = `${dir}.old-${process.pid}`;
  if (existsSync(dir)) await rename(dir, previous);
  await rename(temporary, dir);
  await rm(previous, { recursive: true, force: true });
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
      skippedSteps: number;
      moments: { name: string; shape: number[] }[];
      history: DistillStepRecord[];
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
        optimizer: {
          step: state.optimizerStep,
          moments: state.moments.map((moment) => ({
            ...moment,
            m: tensor(`${moment.name}.m`),
            v: tensor(`${moment.name}.v`),
          })),
        },
      },
      resumeFrom: last.position,
      history: state.history,
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
