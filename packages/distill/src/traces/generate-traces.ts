import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  AbortedError,
  assertSampler,
  createRng,
  InvalidArgumentError,
  type RewardFunction,
  RlvrError,
  type SampleRequest,
  type Sampler,
  validateInteger,
  validateNumber,
  validateOptions,
} from '@rlvr/core';
import cliProgress from 'cli-progress';
import type { PromptRecord, TraceRecord } from './trace-record.js';

/** Options of {@link generateTraces}. */
export type GenerateTracesOptions = {
  /** The teacher. */
  sampler: Sampler;
  prompts: readonly PromptRecord[];
  /** Traces per prompt. */
  k: number;
  /** Sampling settings (temperature, topP, maxNewTokens, …); `seed` is the base seed. */
  sampling: Omit<SampleRequest, 'prompts' | 'n'>;
  /** Scores a trace; `reward ≥ acceptThreshold` marks it accepted. */
  reward: RewardFunction;
  /** Default 1. */
  acceptThreshold?: number;
  /** JSONL file to stream traces to. Existing complete prompts are kept and skipped (resume). */
  outPath: string;
  /** Prompts per sampler call. Default 8. */
  batchSize?: number;
  /** Keep the teacher's behaviour logprobs in the records. Default false. */
  keepLogprobs?: boolean;
  /** Show a progress bar on stderr. Default: when stderr is a TTY and not in CI. */
  progress?: boolean;
  signal?: AbortSignal;
};

/** Summary of a {@link generateTraces} run. */
export type GenerateTracesResult = {
  /** Prompts whose traces were already in the file. */
  resumedPrompts: number;
  /** Prompts sampled in this call. */
  generatedPrompts: number;
  traces: number;
  accepted: number;
  outPath: string;
};

/**
 * Samples `k` traces per prompt from a teacher `Sampler`, scores each with the reward function,
 * and streams them to a JSONL file, one batch of prompts at a time.
 *
 * Resumable and deterministic: each prompt is sampled with a seed derived from `sampling.seed` and
 * its id, so an interrupted run continued later writes the same traces as an uninterrupted one.
 * On start, an existing file is read; prompts with all `k` traces are kept and skipped, and
 * incomplete prompts or a torn last line (from a crash) are dropped and regenerated.
 *
 * @example
 * ```ts
 * await generateTraces({ sampler: teacher, prompts, k: 8, outPath: 'traces.jsonl',
 *   sampling: { maxNewTokens: 128, temperature: 1, seed: 0 }, reward: correctnessReward });
 * ```
 * @throws {InvalidArgumentError} for bad options or duplicate prompt ids.
 */
export async function generateTraces(
  options: GenerateTracesOptions,
): Promise<GenerateTracesResult> {
  const FN = 'generateTraces';
  const raw = validateOptions<GenerateTracesOptions>(options, {
    parameter: 'options',
    functionName: FN,
  });
  assertSampler(raw.sampler, 'options.sampler');
  const sampler = raw.sampler;
  const k = validateInteger(raw.k, { parameter: 'options.k', functionName: FN, min: 1 });
  const batchSize = validateInteger(raw.batchSize ?? 8, {
    parameter: 'options.batchSize',
    functionName: FN,
    min: 1,
  });
  const acceptThreshold = validateNumber(raw.acceptThreshold ?? 1, {
    parameter: 'options.acceptThreshold',
    functionName: FN,
  });
  const sampling = validateOptions<GenerateTracesOptions['sampling']>(raw.sampling, {
    parameter: 'options.sampling',
    functionName: FN,
  });
  const maxNewTokens = validateInteger(sampling.maxNewTokens, {
    parameter: 'options.sampling.maxNewTokens',
    functionName: FN,
    min: 1,
  });
  if (typeof raw.reward !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.reward',
      functionName: FN,
      value: raw.reward,
      expected: 'a reward function',
    });
  }
  if (typeof raw.outPath !== 'string' || raw.outPath.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.outPath',
      functionName: FN,
      value: raw.outPath,
      expected: 'a file path',
    });
  }
  const prompts = readPrompts(raw.prompts, FN);
  const baseRng = createRng(sampling.seed ?? 0);

  const complete = await loadCompletePrompts(raw.outPath, k);
  const todo = prompts.filter((prompt) => !complete.has(prompt.id));
  const showProgress = raw.progress ?? (Boolean(process.stderr.isTTY) && !process.env.CI);
  const bar = showProgress
    ? new cliProgress.SingleBar(
        {
          format:
            'traces |{bar}| {value}/{total} prompts | accepted {accepted} | {eta_formatted} left',
          stream: process.stderr,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(prompts.length, complete.size, { accepted: 0 });

  let traces = 0;
  let accepted = 0;
  try {
    for (let start = 0; start < todo.length; start += batchSize) {
      if (raw.signal?.aborted)
        throw new AbortedError({ operation: `${FN}()`, cause: raw.signal.reason });
      const batch = todo.slice(start, start + batchSize);
      // One sampler call per prompt keeps each prompt's seed independent of batching; calls for a
      // batch run concurrently so a batching sampler can still fuse them.
      const groups = await Promise.all(
        batch.map(async (prompt) => {
          const seed = baseRng.derive(prompt.id).nextUint32();
          const result = await sampler.sample(
            { ...sampling, maxNewTokens, seed, prompts: [prompt.prompt], n: k },
            raw.signal ? { signal: raw.signal } : undefined,
          );
          const group = result?.[0];
          if (!Array.isArray(group) || group.length !== k) {
            throw new RlvrError(
              'INVALID_ARGUMENT',
              `The sampler passed to ${FN}() returned ${Array.isArray(group) ? group.length : 'no'} completions for prompt '${prompt.id}' with n = ${k}`,
            );
          }
          return group;
        }),
      );
      const lines: string[] = [];
      for (let index = 0; index < batch.length; index++) {
        const prompt = batch[index]!;
        const group = groups[index]!;
        for (let sampleIndex = 0; sampleIndex < group.length; sampleIndex++) {
          const completion = group[sampleIndex]!;
          const reward = await raw.reward({
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
          const record: TraceRecord = {
            promptId: prompt.id,
            prompt: prompt.prompt,
            sampleIndex,
            ...(completion.promptTokenIds ? { promptTokenIds: completion.promptTokenIds } : {}),
            completion: completion.text,
            tokenIds: completion.tokenIds,
            ...(raw.keepLogprobs ? { logprobs: completion.logprobs } : {}),
            finishReason: completion.finishReason,
            reward,
            accepted: reward !== null && reward >= acceptThreshold,
            ...(prompt.answer === undefined ? {} : { answer: prompt.answer }),
            ...(prompt.metadata ? { metadata: prompt.metadata } : {}),
          };
          if (record.accepted) accepted++;
          traces++;
          lines.push(JSON.stringify(record));
        }
      }
      await appendFile(raw.outPath, `${lines.join('\n')}\n`);
      bar?.increment(batch.length, { accepted });
    }
  } finally {
    bar?.stop();
  }
  return {
    resumedPrompts: complete.size,
    generatedPrompts: todo.length,
    traces,
    accepted,
    outPath: raw.outPath,
  };
}

/**
 * Reads a traces file. Lines that do not parse (a torn write) are skipped.
 * @throws {RlvrError} when the file cannot be read.
 */
export async function readTraces(path: string): Promise<TraceRecord[]> {
  const text = await readFile(path, 'utf8');
  const records: TraceRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const value = JSON.parse(line) as TraceRecord;
      if (value && typeof value.promptId === 'string' && typeof value.completion === 'string')
        records.push(value);
    } catch {
      // a torn last line from an interrupted write
    }
  }
  return records;
}

/** Keeps only prompts with all k traces, rewriting the file atomically when it had to drop any. */
async function loadCompletePrompts(path: string, k: number): Promise<Set<string>> {
  await mkdir(dirname(path), { recursive: true });
  if (!existsSync(path)) return new Set();
  const records = await readTraces(path);
  const byPrompt = new Map<string, TraceRecord[]>();
  for (const record of records)
    byPrompt.set(record.promptId, [...(byPrompt.get(record.promptId) ?? []), record]);
  const complete = new Set<string>();
  const kept: TraceRecord[] = [];
  for (const [promptId, group] of byPrompt) {
    const indices = new Set(group.map((record) => record.sampleIndex));
    if (group.length === k && indices.size === k) {
      complete.add(promptId);
      kept.push(...group);
    }
  }
  const original = await readFile(path, 'utf8');
  const rewritten =
    kept.map((record) => JSON.stringify(record)).join('\n') + (kept.length ? '\n' : '');
  if (rewritten !== original) {
    const temporary = `${path}.tmp-${process.pid}`;
    await writeFile(temporary, rewritten);
    await rename(temporary, path);
  }
  return complete;
}

function readPrompts(value: unknown, functionName: string): PromptRecord[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.prompts',
      functionName,
      value,
      expected: 'a non-empty array of { id, prompt }',
    });
  }
  const ids = new Set<string>();
  value.forEach((record, index) => {
    if (!record || typeof record.id !== 'string' || typeof record.prompt !== 'string') {
      throw new InvalidArgumentError({
        parameter: `options.prompts[${index}]`,
        functionName,
        value: record,
        expected: '{ id: string, prompt: string, answer?, metadata? }',
      });
    }
    if (ids.has(record.id)) {
      throw new InvalidArgumentError({
        parameter: `options.prompts[${index}].id`,
        functionName,
        value: record.id,
        expected: 'a unique prompt id',
      });
    }
    ids.add(record.id);
  });
  return value as PromptRecord[];
}
