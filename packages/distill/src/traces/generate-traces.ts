import { existsSync } from 'node:fs';
import { appendFile, mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type Completion,
  createRng,
  InvalidArgumentError,
  isAbortedGroup,
  OverwriteRefusedError,
  ResumeMismatchError,
  RlvrError,
  throwIfAborted,
} from '@rlvr/core';
import cliProgress from 'cli-progress';
import {
  type GenerateTracesOptions,
  type ValidatedTraceOptions,
  validateGenerateOptions,
} from './generate-traces-options.js';
import {
  completeGroups,
  makeHeader,
  parseTracesFile,
  settingsDifferences,
  type TracesHeader,
} from './trace-file.js';
import type { PromptRecord, TraceRecord } from './trace-record.js';

const FN = 'generateTraces';

/** Summary of a {@link generateTraces} run. */
export type GenerateTracesResult = {
  /** Requested prompts whose traces were already in the file. */
  resumedPrompts: number;
  /** Prompts sampled and written in this call. */
  generatedPrompts: number;
  /** Prompts whose group came back aborted (`finishReason: 'abort'`): not written. */
  abortedPrompts: number;
  traces: number;
  accepted: number;
  outPath: string;
  /** The file's fingerprint: pass it to `readTraces(outPath, { fingerprint })`. */
  fingerprint: string;
};

/**
 * Samples `k` traces per prompt from a teacher `Sampler`, scores each with the reward function,
 * and streams them to a JSONL file, one batch of prompts at a time.
 *
 * Resumable and deterministic: each prompt is sampled with a seed derived from `sampling.seed` and
 * its id, so an interrupted run continued later writes the same traces as an uninterrupted one.
 * The file starts with a header line holding a fingerprint of the teacher (`teacher.weights`),
 * `k`, the sampling settings and the seed; a file with another fingerprint is never resumed
 * (`RESUME_MISMATCH`, unless `overwrite: true` starts a new file). On resume, prompts with all `k`
 * traces are skipped; incomplete prompts are sampled again and appended (the new group supersedes
 * the partial one when read). Nothing already in the file is deleted or rewritten.
 *
 * A group the sampler returns with a `finishReason: 'abort'` completion is not written (counted in
 * `abortedPrompts`); an aborted `signal` rejects with `AbortedError` and writes nothing more.
 *
 * @example
 * ```ts
 * const { fingerprint } = await generateTraces({ sampler: teacher, prompts, k: 8,
 *   outPath: 'traces.jsonl', teacher: { weights: teacherCheckpoint },
 *   sampling: { maxNewTokens: 128, temperature: 1, seed: 0 }, reward: correctnessReward });
 * const traces = await readTraces('traces.jsonl', { fingerprint, promptIds: prompts.map((p) => p.id) });
 * ```
 * @throws {InvalidArgumentError} for bad options (`UNKNOWN_OPTION`, `INEFFECTIVE_OPTION`) or duplicate prompt ids.
 * @throws {ResumeMismatchError} `RESUME_MISMATCH` when the file was written with other settings.
 * @throws {OverwriteRefusedError} `WOULD_OVERWRITE` for `resume: false` on a non-empty file.
 * @throws {AbortedError} `ABORTED` when `signal` aborts.
 */
export async function generateTraces(
  options: GenerateTracesOptions,
): Promise<GenerateTracesResult> {
  const input = validateGenerateOptions(options);
  const header = makeHeader(input.settings);
  const complete = await prepareFile(input, header);
  const todo = input.prompts.filter((prompt) => !complete.has(prompt.id));
  const resumedPrompts = input.prompts.length - todo.length;
  const bar = progressBar(input.raw.progress);
  bar?.start(input.prompts.length, resumedPrompts, { accepted: 0 });
  const totals = { generatedPrompts: 0, abortedPrompts: 0, traces: 0, accepted: 0 };
  const baseRng = createRng(input.sampling.seed);
  const signal = input.raw.signal;
  try {
    for (let start = 0; start < todo.length; start += input.batchSize) {
      throwIfAborted(signal, `${FN}()`);
      const batch = todo.slice(start, start + input.batchSize);
      // One sampler call per prompt keeps each prompt's seed independent of batching; calls for a
      // batch run concurrently so a batching sampler can still fuse them.
      const groups = await Promise.all(
        batch.map((prompt) =>
          samplePrompt(input, prompt, baseRng.derive(prompt.id).nextUint32(), signal),
        ),
      );
      // A sampler that resolved despite the abort: nothing of this batch is written.
      throwIfAborted(signal, `${FN}()`);
      const lines: string[] = [];
      for (let index = 0; index < batch.length; index++) {
        const group = groups[index]!;
        if (isAbortedGroup(group)) {
          totals.abortedPrompts++;
          continue;
        }
        const records = await scoreGroup(input, batch[index]!, group);
        totals.generatedPrompts++;
        totals.traces += records.length;
        totals.accepted += records.filter((record) => record.accepted).length;
        lines.push(...records.map((record) => JSON.stringify(record)));
      }
      throwIfAborted(signal, `${FN}()`);
      if (lines.length > 0) await appendFile(input.outPath, `${lines.join('\n')}\n`);
      bar?.increment(batch.length, { accepted: totals.accepted });
    }
  } finally {
    bar?.stop();
  }
  return {
    resumedPrompts,
    ...totals,
    outPath: input.outPath,
    fingerprint: header.fingerprint,
  };
}

function progressBar(progress: boolean | undefined) {
  const show = progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI);
  return show
    ? new cliProgress.SingleBar(
        {
          format:
            'traces |{bar}| {value}/{total} prompts | accepted {accepted} | {eta_formatted} left',
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
}

async function samplePrompt(
  input: ValidatedTraceOptions,
  prompt: PromptRecord,
  seed: number,
  signal: AbortSignal | undefined,
): Promise<Completion[]> {
  const result = await input.sampler.sample(
    { ...input.sampling, seed, prompts: [prompt.prompt], n: input.k },
    signal ? { signal } : undefined,
  );
  const group = result?.[0];
  if (!Array.isArray(group) || group.length !== input.k) {
    throw new RlvrError(
      'INVALID_ARGUMENT',
      `The sampler passed to ${FN}() returned ${Array.isArray(group) ? group.length : 'no'} completions for prompt '${prompt.id}' with n = ${input.k}`,
    );
  }
  return group;
}

async function scoreGroup(
  input: ValidatedTraceOptions,
  prompt: PromptRecord,
  group: readonly Completion[],
): Promise<TraceRecord[]> {
  const records: TraceRecord[] = [];
  for (let sampleIndex = 0; sampleIndex < group.length; sampleIndex++) {
    const completion = group[sampleIndex]!;
    const reward = await input.reward({
      prompt: prompt.prompt,
      completion: completion.text,
      answer: prompt.answer,
      promptId: prompt.id,
      finishReason: completion.finishReason,
      completionTokens: completion.tokenIds.length,
      ...(prompt.metadata ? { metadata: prompt.metadata } : {}),
    });
    if (reward !== null && (typeof reward !== 'number' || !Number.isFinite(reward))) {
      throw new InvalidArgumentError({
        parameter: 'options.reward',
        functionName: FN,
        value: reward,
        expected: `a finite number or null (prompt '${prompt.id}', sample ${sampleIndex})`,
      });
    }
    records.push({
      promptId: prompt.id,
      prompt: prompt.prompt,
      sampleIndex,
      ...(completion.promptTokenIds ? { promptTokenIds: completion.promptTokenIds } : {}),
      completion: completion.text,
      tokenIds: completion.tokenIds,
      ...(input.keepLogprobs ? { logprobs: completion.logprobs } : {}),
      finishReason: completion.finishReason,
      reward,
      accepted: reward !== null && reward >= input.acceptThreshold,
      ...(prompt.answer === undefined ? {} : { answer: prompt.answer }),
      ...(prompt.metadata ? { metadata: prompt.metadata } : {}),
    });
  }
  return records;
}

/**
 * Checks the existing file (if any) against the header and returns the requested prompts that are
 * already complete in it. Starts a new file (header only) when there is none, it is empty, or
 * `overwrite: true` allows replacing it. Never deletes or rewrites traces otherwise.
 */
async function prepareFile(
  input: ValidatedTraceOptions,
  header: TracesHeader,
): Promise<Set<string>> {
  const { outPath } = input;
  const existing = existsSync(outPath) ? await stat(outPath) : undefined;
  if (existing?.isDirectory()) {
    throw new OverwriteRefusedError({
      path: outPath,
      reason: 'it is a folder, not a traces file',
      functionName: FN,
    });
  }
  if (existing === undefined || existing.size === 0) {
    await startFile(outPath, header);
    return new Set();
  }
  const parsed = await parseTracesFile(outPath);
  if (!input.resume) {
    if (!input.overwrite) {
      throw new OverwriteRefusedError({
        path: outPath,
        reason: `it already holds ${parsed.lines} lines of traces and resume is false`,
        allowWith: 'overwrite: true (starts a new file)',
        functionName: FN,
      });
    }
    await startFile(outPath, header);
    return new Set();
  }
  if (parsed.header?.fingerprint !== header.fingerprint) {
    if (!input.overwrite) {
      throw new ResumeMismatchError({
        what: `The traces file ${outPath}`,
        differences: settingsDifferences(parsed.header?.settings, header.settings),
        allowWith: 'overwrite: true (starts a new file), or another outPath',
        functionName: FN,
      });
    }
    await startFile(outPath, header);
    return new Set();
  }
  // A torn last line: end it so that the next record starts on its own line.
  if (!parsed.endsWithNewline) await appendFile(outPath, '\n');
  const wanted = new Set(input.prompts.map((prompt) => prompt.id));
  const groups = completeGroups(parsed.records, input.k);
  return new Set([...groups.keys()].filter((promptId) => wanted.has(promptId)));
}

/** Writes a file holding only the header, atomically (temporary file + rename). */
async function startFile(path: string, header: TracesHeader): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(header)}\n`);
  await rename(temporary, path);
}
