import {
  closeSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  InvalidArgumentError,
  OverwriteRefusedError,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import { validatePath } from '../sinks/file-options.js';
import { readRunFolder } from './read-run.js';
import { type PageSettings, renderRunPage } from './run-page.js';

/** Options of {@link renderRunReport}. */
export type RunReportOptions = {
  /** The page title. Default: `GRPO run: <folder name>` (or distillation). */
  title?: string;
  /** At most this many completions (most recent steps first) and traces in the tables. Default 64. */
  maxCompletions?: number;
  /** Chart smoothing, TensorBoard's EMA weight in [0, 1). Default 0.6. */
  smoothing?: number;
};

/** Options of {@link writeRunReport}. */
export type WriteRunReportOptions = RunReportOptions & {
  /** Where to write the page. Default `<runDir>/report.html`. */
  out?: string;
  /** Replace an existing `out` file. Default false (`WOULD_OVERWRITE`). */
  overwrite?: boolean;
};

const RENDER_KEYS = ['title', 'maxCompletions', 'smoothing'] as const;

function settingsOf(options: unknown, functionName: string, known: readonly string[]) {
  const checked = validateOptions<WriteRunReportOptions>(options, {
    parameter: 'options',
    functionName,
    known,
  });
  if (checked.title !== undefined && typeof checked.title !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.title',
      functionName,
      value: checked.title,
      expected: 'a string',
    });
  }
  const settings: PageSettings = {
    maxCompletions:
      checked.maxCompletions === undefined
        ? 64
        : validateInteger(checked.maxCompletions, {
            parameter: 'options.maxCompletions',
            functionName,
            min: 0,
          }),
    smoothing:
      checked.smoothing === undefined
        ? 0.6
        : validateNumber(checked.smoothing, {
            parameter: 'options.smoothing',
            functionName,
            min: 0,
            max: 1,
            exclusiveMax: true,
          }),
    ...(checked.title === undefined ? {} : { title: checked.title }),
  };
  return { checked, settings };
}

/**
 * Renders the run page of a GrpoTrainer or distillation run folder as one self-contained HTML
 * document (inline CSS and SVG, one small inline script that checks the charts laid out; no
 * external resources): a chart of every logged metric, grouped by name prefix (`reward/…`,
 * `completions/…`), each with its own step range, raw values faint and smoothed values solid; a
 * summary table of every metric; the most recent completions with their rewards, advantage,
 * finish reason and violations; teacher traces; checkpoints; and the config (config files and
 * the settings saved in checkpoints). Every text from the files is HTML-escaped. Reads only.
 *
 * @example
 * ```ts
 * const html = await renderRunReport('runs/grpo-math');
 * ```
 * @throws {InvalidArgumentError} for bad options, or a folder that holds no run files.
 */
export async function renderRunReport(
  runDir: string,
  options: RunReportOptions = {},
): Promise<string> {
  const functionName = 'renderRunReport';
  const { settings } = settingsOf(options, functionName, RENDER_KEYS);
  const run = await readRunFolder(runDir, functionName);
  return renderRunPage(run, settings);
}

function exists(path: string): { directory: boolean } | undefined {
  try {
    return { directory: statSync(path).isDirectory() };
  } catch {
    return undefined;
  }
}

/**
 * Writes {@link renderRunReport}'s page to `out` (default `<runDir>/report.html`), atomically
 * (temporary sibling, fsync, rename). Everything is read and rendered before anything is
 * written; an existing `out` is replaced only with `overwrite: true`.
 *
 * @example
 * ```ts
 * const { path } = await writeRunReport('runs/grpo-math', { overwrite: true });
 * ```
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` when `out` exists and `overwrite` is not set.
 * @throws {InvalidArgumentError} for bad options, or a folder that holds no run files.
 */
export async function writeRunReport(
  runDir: string,
  options: WriteRunReportOptions = {},
): Promise<{ path: string; bytes: number }> {
  const functionName = 'writeRunReport';
  const { checked, settings } = settingsOf(options, functionName, [
    ...RENDER_KEYS,
    'out',
    'overwrite',
  ]);
  if (checked.overwrite !== undefined && typeof checked.overwrite !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.overwrite',
      functionName,
      value: checked.overwrite,
      expected: 'a boolean',
    });
  }
  const out =
    checked.out === undefined
      ? join(runDir, 'report.html')
      : validatePath(checked.out, 'options.out', functionName);
  const found = exists(out);
  if (found?.directory) {
    throw new InvalidArgumentError({
      parameter: 'options.out',
      functionName,
      value: out,
      expected: 'a file path (this is a folder)',
    });
  }
  if (found && checked.overwrite !== true) {
    throw new OverwriteRefusedError({
      path: out,
      reason: 'the file exists',
      allowWith: 'overwrite: true (--overwrite)',
      functionName,
    });
  }
  const run = await readRunFolder(runDir, functionName);
  const html = renderRunPage(run, settings);
  await mkdir(dirname(resolve(out)), { recursive: true });
  const temporary = join(dirname(out), `.${basename(out)}.tmp-${process.pid}-${Date.now()}`);
  const fd = openSync(temporary, 'wx');
  try {
    try {
      writeFileSync(fd, html);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  if (!found && exists(out)) {
    rmSync(temporary, { force: true });
    throw new OverwriteRefusedError({
      path: out,
      reason: 'the file appeared while the report was rendered',
      functionName,
    });
  }
  renameSync(temporary, out);
  return { path: out, bytes: Buffer.byteLength(html) };
}
