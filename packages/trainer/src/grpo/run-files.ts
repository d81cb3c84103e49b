import { appendFile, mkdir, readdir, rm, rmdir, stat, truncate } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { InvalidArgumentError, OverwriteRefusedError, ResumeMismatchError } from '@rlvr/core';
import { type CheckpointEntry, isRunCheckpoint, listCheckpoints } from './run-checkpoint.js';

/** The files a run writes under `outputDir`. @internal */
export const METRICS_FILE = 'metrics.jsonl';
/** @internal */
export const COMPLETIONS_FILE = 'completions.jsonl';
/** @internal */
export const CHECKPOINTS_DIR = 'checkpoints';

/**
 * What `createGrpoTrainer` will do with `outputDir`, decided (and refused) before anything is
 * written:
 * - `fresh`: a new run; `clear` lists the previous run's files to remove (only with `overwrite`).
 * - `resume`: continue from `checkpoint`; `inPlace` when it lies in `outputDir/checkpoints` (the
 *   logs are then cut back to the checkpoint's offsets), else the logs start empty here.
 * @internal
 */
export type RunPlan =
  | { kind: 'fresh'; clear: string[] }
  | { kind: 'resume'; checkpoint: string; inPlace: boolean; clear: string[] };

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The run files present in `outputDir` (`metrics.jsonl`, `completions.jsonl`, a non-empty `checkpoints/`). */
async function runFiles(outputDir: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of [METRICS_FILE, COMPLETIONS_FILE]) {
    if (await exists(join(outputDir, name))) found.push(join(outputDir, name));
  }
  const entries = await readdir(join(outputDir, CHECKPOINTS_DIR)).catch(() => []);
  if (entries.length > 0) found.push(join(outputDir, CHECKPOINTS_DIR));
  return found;
}

function refuse(files: string[], reason: string, functionName: string): never {
  throw new OverwriteRefusedError({
    path: files[0]!,
    reason: `${reason} (${files.map((file) => `'${file}'`).join(', ')})`,
    allowWith: 'overwrite: true (removes the previous run) or resume: true (continues it)',
    functionName,
  });
}

/**
 * Decides what to do with `outputDir` for `resume` / `overwrite`, reading only.
 * @throws {OverwriteRefusedError} when a fresh start would replace another run's files and
 * `overwrite` is not set. @throws {InvalidArgumentError} for `resume: '<path>'` that is not a
 * run checkpoint, or `resume: true` without `outputDir`. @internal
 */
export async function planRun(options: {
  outputDir: string | undefined;
  resume: boolean | string | undefined;
  overwrite: boolean;
  functionName: string;
}): Promise<RunPlan> {
  const { outputDir, resume, overwrite, functionName } = options;
  if (typeof resume === 'string') {
    if (resume === '' || !(await isRunCheckpoint(resume))) {
      throw new InvalidArgumentError({
        parameter: 'options.resume',
        functionName,
        value: resume,
        expected:
          'the path of a GrpoTrainer checkpoint folder (checkpoints/step-N with a state.json), or true',
      });
    }
    if (outputDir === undefined)
      return { kind: 'resume', checkpoint: resume, inPlace: false, clear: [] };
    const inPlace = resolve(dirname(resume)) === resolve(outputDir, CHECKPOINTS_DIR);
    if (inPlace) return { kind: 'resume', checkpoint: resume, inPlace, clear: [] };
    const files = await runFiles(outputDir);
    if (files.length > 0 && !overwrite) {
      refuse(files, 'the checkpoint is from another folder and this one holds a run', functionName);
    }
    return { kind: 'resume', checkpoint: resume, inPlace, clear: files };
  }
  if (resume === true && outputDir === undefined) {
    throw new InvalidArgumentError({
      parameter: 'options.resume',
      functionName,
      value: true,
      expected: 'a checkpoint path, or config.outputDir to look for checkpoints in',
    });
  }
  if (outputDir === undefined) return { kind: 'fresh', clear: [] };
  if (resume === true) {
    const newest = (await listCheckpoints(join(outputDir, CHECKPOINTS_DIR))).at(-1);
    if (newest) return { kind: 'resume', checkpoint: newest.path, inPlace: true, clear: [] };
  }
  const files = await runFiles(outputDir);
  if (files.length > 0 && !overwrite) {
    refuse(
      files,
      resume === true
        ? 'it holds run files but no checkpoint to resume from, so a fresh start would replace them'
        : 'it holds the files of a previous run',
      functionName,
    );
  }
  return { kind: 'fresh', clear: files };
}

/**
 * Removes the previous run's files listed by {@link planRun} (only called with `overwrite`):
 * the two logs, and inside `checkpoints/` only complete run checkpoints (other entries are kept).
 * @internal
 */
export async function clearPreviousRun(files: readonly string[]): Promise<void> {
  for (const file of files) {
    if (file.endsWith(CHECKPOINTS_DIR)) {
      const entries: CheckpointEntry[] = await listCheckpoints(file);
      for (const entry of entries) await rm(entry.path, { recursive: true, force: true });
      await rmdir(file).catch(() => undefined); // only when now empty
    } else {
      await rm(file, { force: true });
    }
  }
}

async function fileSize(path: string): Promise<number | undefined> {
  return stat(path).then(
    (info) => info.size,
    () => undefined,
  );
}

type LogOffsets = { metricsBytes: number; completionsBytes: number };

function logs(files: LogOffsets) {
  return [
    [METRICS_FILE, files.metricsBytes],
    [COMPLETIONS_FILE, files.completionsBytes],
  ] as const;
}

/**
 * Checks (reading only) that both logs are at least as long as the checkpoint recorded; a
 * shorter log is not this run's (or was edited): refused. @internal
 */
export async function checkLogs(
  outputDir: string,
  files: LogOffsets,
  functionName: string,
): Promise<void> {
  for (const [name, bytes] of logs(files)) {
    const size = (await fileSize(join(outputDir, name))) ?? 0;
    if (size < bytes) {
      throw new ResumeMismatchError({
        what: `'${join(outputDir, name)}'`,
        differences: [{ field: 'bytes', saved: bytes, current: size }],
        functionName,
      });
    }
  }
}

/**
 * Cuts both logs back to the byte lengths recorded in the checkpoint (dropping lines written
 * after it, including a torn last line); run {@link checkLogs} first. @internal
 */
export async function cutLogs(outputDir: string, files: LogOffsets): Promise<void> {
  for (const [name, bytes] of logs(files)) {
    const size = await fileSize(join(outputDir, name));
    if (size !== undefined && size > bytes) await truncate(join(outputDir, name), bytes);
  }
}

/** Appends `text` to a log, creating `outputDir` when needed; returns the bytes written. @internal */
export async function appendLog(outputDir: string, name: string, text: string): Promise<number> {
  await mkdir(outputDir, { recursive: true });
  await appendFile(join(outputDir, name), text);
  return Buffer.byteLength(text);
}
