import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { InvalidArgumentError, type MetricRecord } from '@rlvr/core';

/** A row of `completions.jsonl` (core's `CompletionRecord`, plus `violations` when a writer adds them). */
export type CompletionRow = {
  step: number;
  promptId: string;
  prompt: string;
  completion: string;
  reward: number | null;
  rewards: Record<string, number | null>;
  advantage?: number;
  finishReason?: string;
  completionTokens?: number;
  violations?: string[];
};

/** A teacher trace (a line of a distillation traces file). */
export type TraceRow = {
  promptId: string;
  prompt: string;
  sampleIndex?: number;
  completion: string;
  reward: number | null;
  accepted: boolean;
  finishReason?: string;
};

/** A checkpoint found in the run folder. */
export type CheckpointInfo = {
  /** Relative to the run folder (`.` for the folder itself). */
  path: string;
  kind: 'grpo' | 'distill' | 'model';
  step?: number;
  runId?: string;
};

/** What {@link readRunFolder} found. */
export type RunFolder = {
  dir: string;
  /** `grpo` and/or `distill`, from the files found. */
  kinds: ('grpo' | 'distill')[];
  /** Every metric record, in file order (distillation history when no metrics file has them). */
  metrics: MetricRecord[];
  /** Where the records came from (file names relative to the run folder). */
  metricsSources: string[];
  completions: CompletionRow[];
  traces: TraceRow[];
  checkpoints: CheckpointInfo[];
  /** Configs and saved settings: raw text of config files, pretty JSON of checkpoint settings. */
  config: { source: string; text: string }[];
  /** Lines that could not be read (torn or not JSON), named by file and line. */
  warnings: string[];
};

type JsonlKind = 'metrics' | 'completions' | 'traces' | 'other';

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function classify(first: unknown): JsonlKind {
  if (!isObject(first)) return 'other';
  if (first.type === 'header' && first.format === 'rlvr-traces-v1') return 'traces';
  if (typeof first.promptId === 'string' && typeof first.completion === 'string') {
    return 'accepted' in first ? 'traces' : 'completions';
  }
  if (typeof first.step === 'number' && isObject(first.metrics)) return 'metrics';
  return 'other';
}

/** Parses a JSONL text; unreadable lines become warnings naming file and line. */
function parseJsonl(text: string, source: string, warnings: string[]): unknown[] {
  const values: unknown[] = [];
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const trimmed = line.replace(/^\uFEFF/, '').trim();
    if (trimmed === '') return;
    try {
      values.push(JSON.parse(trimmed));
    } catch {
      const torn = index === lines.length - 1 ? ' (torn last line)' : '';
      warnings.push(`${source}:${index + 1}: not JSON${torn}, skipped`);
    }
  });
  return values;
}

/** JSON `null` in a metrics line is a non-finite number JSON could not hold: read back as NaN. */
function toMetricRecord(value: unknown): MetricRecord | undefined {
  if (!isObject(value) || typeof value.step !== 'number' || !isObject(value.metrics))
    return undefined;
  const metrics: Record<string, number> = {};
  for (const [name, entry] of Object.entries(value.metrics)) {
    if (typeof entry === 'number') metrics[name] = entry;
    else if (entry === null) metrics[name] = Number.NaN;
  }
  return {
    step: value.step,
    ...(typeof value.elapsedMs === 'number' ? { elapsedMs: value.elapsedMs } : {}),
    ...(typeof value.phase === 'string' ? { phase: value.phase } : {}),
    metrics,
  };
}

async function readJson(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    const value = JSON.parse(await readFile(path, 'utf8')) as unknown;
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

/** Distillation history (`DistillStepRecord[]`) as metric records of phase `distill`. */
function distillRecords(history: unknown): MetricRecord[] {
  if (!Array.isArray(history)) return [];
  let elapsedMs = 0;
  return history.filter(isObject).map((entry) => {
    elapsedMs += typeof entry.timeMs === 'number' ? entry.timeMs : 0;
    const metrics: Record<string, number> = {};
    const copy = (from: string, to: string) => {
      if (typeof entry[from] === 'number') metrics[to] = entry[from];
    };
    copy('loss', 'loss');
    copy('learningRate', 'learning_rate');
    copy('gradNorm', 'grad_norm');
    copy('tokens', 'tokens');
    copy('epoch', 'epoch');
    if (typeof entry.onPolicy === 'boolean') metrics.on_policy = entry.onPolicy ? 1 : 0;
    if (isObject(entry.eval)) {
      for (const [name, value] of Object.entries(entry.eval)) {
        if (typeof value === 'number') metrics[`eval/${name}`] = value;
      }
    }
    return { step: Number(entry.step), elapsedMs, phase: 'distill', metrics };
  });
}

/** Checkpoint folders: the run folder, its direct subfolders and `checkpoints/*`. */
async function findCheckpoints(dir: string, names: string[]) {
  const candidates = ['.', ...names];
  if (names.includes('checkpoints')) {
    const inner = await readdir(join(dir, 'checkpoints')).catch(() => [] as string[]);
    candidates.push(...inner.sort().map((name) => `checkpoints/${name}`));
  }
  const found: { info: CheckpointInfo; state?: Record<string, unknown> }[] = [];
  for (const relative of candidates) {
    const path = join(dir, relative);
    if (!(await isDirectory(path))) continue;
    const state = await readJson(join(path, 'state.json'));
    if (state?.format === 'rlvr-grpo-run-v2' || (state && typeof state.runId === 'string')) {
      const info: CheckpointInfo = { path: relative, kind: 'grpo' };
      if (typeof state.step === 'number') info.step = state.step;
      if (typeof state.runId === 'string') info.runId = state.runId;
      found.push({ info, state });
    } else if (state?.format === 'rlvr-distill-v1') {
      const history = Array.isArray(state.history) ? state.history : [];
      const last = history.at(-1) as { step?: unknown } | undefined;
      const info: CheckpointInfo = { path: relative, kind: 'distill' };
      if (typeof last?.step === 'number') info.step = last.step;
      found.push({ info, state });
    } else if (relative !== '.' && (await readJson(join(path, 'config.json'))) !== undefined) {
      const files = await readdir(path);
      if (files.some((file) => file.endsWith('.safetensors'))) {
        found.push({ info: { path: relative, kind: 'model' } });
      }
    }
  }
  return found;
}

const CONFIG_FILE = /^(?:.*config.*|.*settings.*)\.json$|\.ya?ml$|\.toml$/i;

/** Metrics, completions and traces files and config files at the root of the run folder. */
async function readRootFiles(dir: string, names: readonly string[], run: RunFolder): Promise<void> {
  for (const name of names) {
    const path = join(dir, name);
    if (extname(name) === '.jsonl' && !(await isDirectory(path))) {
      const values = parseJsonl(await readFile(path, 'utf8'), name, run.warnings);
      const kind = classify(values[0]);
      if (kind === 'metrics') {
        run.metrics.push(...values.flatMap((value) => toMetricRecord(value) ?? []));
        run.metricsSources.push(name);
      } else if (kind === 'completions') {
        run.completions.push(...(values.filter(isObject) as CompletionRow[]));
      } else if (kind === 'traces') {
        run.traces.push(
          ...(values.filter((value) => isObject(value) && value.type !== 'header') as TraceRow[]),
        );
        const header = values[0] as Record<string, unknown>;
        if (header.type === 'header') {
          run.config.push({
            source: `${name} (traces header)`,
            text: JSON.stringify(header.settings, null, 2),
          });
        }
      }
    } else if (CONFIG_FILE.test(name) && !(await isDirectory(path))) {
      run.config.push({ source: name, text: await readFile(path, 'utf8') });
    }
  }
}

/** Checkpoints, the newest GRPO one's settings, distillation settings and history (as metrics). */
async function addCheckpoints(dir: string, names: string[], run: RunFolder) {
  const checkpoints = await findCheckpoints(dir, names);
  run.checkpoints = checkpoints.map((entry) => entry.info);
  const newestGrpo = checkpoints.filter((entry) => entry.info.kind === 'grpo').at(-1);
  if (newestGrpo?.state?.settings !== undefined) {
    run.config.push({
      source: `${newestGrpo.info.path}/state.json (settings)`,
      text: JSON.stringify(newestGrpo.state.settings, null, 2),
    });
  }
  for (const entry of checkpoints.filter((found) => found.info.kind === 'distill')) {
    if (!run.metrics.some((record) => record.phase === 'distill')) {
      run.metrics.push(...distillRecords(entry.state?.history));
      run.metricsSources.push(`${entry.info.path}/state.json (history)`);
    }
    if (entry.state?.settings !== undefined) {
      run.config.push({
        source: `${entry.info.path}/state.json (settings)`,
        text: JSON.stringify(entry.state.settings, null, 2),
      });
    }
  }
  return checkpoints;
}

/**
 * Reads what GrpoTrainer and distillation write into a run folder: metric records (every root
 * `*.jsonl` whose lines are `{ step, metrics }`, e.g. `metrics.jsonl`), `completions.jsonl`,
 * traces files (`rlvr-traces-v1` header), GrpoTrainer checkpoints (`checkpoints/step-N` with
 * `state.json`), distillation checkpoints (the folder itself or a subfolder with an
 * `rlvr-distill-v1` `state.json`, whose history gives the `distill` metrics when no metrics file
 * has them), model checkpoints, and config files (`*config*.json`, `*.yaml`, `*.yml`, `*.toml`).
 * Reads only.
 * @throws {InvalidArgumentError} when `dir` is not a folder or holds none of these.
 */
export async function readRunFolder(
  dir: string,
  functionName = 'readRunFolder',
): Promise<RunFolder> {
  if (typeof dir !== 'string' || dir === '' || !(await isDirectory(dir))) {
    throw new InvalidArgumentError({
      parameter: 'runDir',
      functionName,
      value: dir,
      expected: 'a run folder',
    });
  }
  const names = (await readdir(dir)).sort();
  const run: RunFolder = {
    dir,
    kinds: [],
    metrics: [],
    metricsSources: [],
    completions: [],
    traces: [],
    checkpoints: [],
    config: [],
    warnings: [],
  };
  await readRootFiles(dir, names, run);
  const checkpoints = await addCheckpoints(dir, names, run);
  const newestGrpo = checkpoints.find((entry) => entry.info.kind === 'grpo');
  if (
    run.completions.length > 0 ||
    newestGrpo ||
    run.metrics.some((record) => record.phase === 'train')
  ) {
    run.kinds.push('grpo');
  }
  if (run.traces.length > 0 || checkpoints.some((entry) => entry.info.kind === 'distill')) {
    run.kinds.push('distill');
  }
  if (
    run.metrics.length === 0 &&
    run.completions.length === 0 &&
    run.traces.length === 0 &&
    run.checkpoints.length === 0
  ) {
    throw new InvalidArgumentError({
      parameter: 'runDir',
      functionName,
      value: dir,
      expected: `a GrpoTrainer or distillation run folder (metrics.jsonl, completions.jsonl, checkpoints/, a traces file or a distillation checkpoint); '${basename(dir)}' holds none`,
    });
  }
  return run;
}
