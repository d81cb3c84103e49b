import { existsSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError, ResumeMismatchError } from '@rlvr/core';
import {
  distillStudent,
  filterTraces,
  generateTraces,
  readTraces,
  readTracesHeader,
  type TraceRecord,
} from '@rlvr/distill';
import { type Checkpoint, createTokenizer } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer } from '@rlvr/trainer';
import type { RunConfig } from './config.js';
import { type ProgressMode, phaseProgress } from './progress.js';
import { verifiedReward } from './rewards.js';
import { createSampler, type Runtime } from './runtime.js';

/** What the distillation phase measured. */
export type DistillResult = {
  traceMs: number;
  trainMs: number;
  traces: number;
  accepted: number;
  kept: number;
  teacherTracePassRate: number;
  /** Fingerprint of `traces.jsonl` (teacher weights, sampling, k, seed: @rlvr/distill's). */
  tracesFingerprint?: string;
  /** Time the teacher's traces took to generate, ms (with the reused ones' original time). */
  traceGenerateMs?: number;
  /** Prompts whose traces were reused from the file (same fingerprint). */
  reusedTracePrompts?: number;
  steps: number;
  losses: number[];
};

/**
 * Distils the student from the RL teacher with @rlvr/distill's public API: `generateTraces` (k
 * traces per prompt from an ONNX sampler of the teacher, scored by the verifier, streamed to
 * `<outDir>/traces.jsonl`), `filterTraces` (verified ones, shortest first, duplicates dropped) and
 * `distillStudent` (SFT on the kept traces, completion-only loss).
 */
export async function distillPhase(
  config: RunConfig,
  runtime: Runtime,
  outDir: string,
  teacher: Checkpoint,
  student: Checkpoint,
  options: {
    problems: readonly { id: string; prompt: string; answer: string }[];
    progressMode: ProgressMode;
    /** The previous result of this phase, if any (its trace-generation time is reused with its traces). */
    previous?: DistillResult;
    log: (line: string) => void;
  },
): Promise<{ result: DistillResult; checkpoints: Record<string, Checkpoint> }> {
  const traceStarted = performance.now();
  const generated = await teacherTraces(config, runtime, outDir, teacher, options);
  const { kept, report } = filterTraces(generated.traces, {
    maxPerPrompt: config.distill.maxPerPrompt,
    prefer: 'shorter',
    dropTruncated: true,
    dedupeThreshold: 1,
  });
  const traces = generated.traces;
  // Traces reused from an earlier run of the same teacher count with the time they took then, so
  // the RL-only student's budget is the distillation's full cost either way.
  const reusedMs =
    generated.resumedPrompts > 0 && options.previous?.tracesFingerprint === generated.fingerprint
      ? (options.previous.traceGenerateMs ?? 0)
      : 0;
  const traceGenerateMs = reusedMs + generated.generateMs;
  const traceMs = reusedMs + performance.now() - traceStarted;
  const trainStarted = performance.now();
  const tokenizer = createTokenizer(student.tokenizer!);
  const model = await createLlamaModel(student);
  const stepsPerEpoch = Math.ceil(kept.length / config.distill.batchSize);
  const totalSteps = Math.max(1, stepsPerEpoch * config.distill.epochs);
  const trainer = await createPolicyTrainer(model, {
    schedule: {
      learningRate: config.distill.learningRate,
      schedule: 'cosine',
      warmupSteps: Math.min(10, Math.floor(totalSteps / 10)),
      totalSteps,
    },
    maxGradNorm: 1,
    microBatchSize: 64,
  });
  const progress = phaseProgress('distill student', totalSteps, options.progressMode);
  try {
    if (kept.length === 0) {
      throw new InvalidArgumentError({
        parameter: 'distill',
        functionName: 'teacher-student',
        value: report,
        expected: 'at least one verified teacher trace (the RL teacher solved nothing)',
      });
    }
    const result = await distillStudent({
      trainer,
      traces: kept,
      encodePrompt: (prompt) => tokenizer.encode(prompt),
      loss: { type: 'sft' },
      epochs: config.distill.epochs,
      batchSize: config.distill.batchSize,
      seed: config.seed,
      progress: false,
      onStep: (record) => progress.update(record.step, `loss ${record.loss.toFixed(3)}`),
    });
    return {
      result: {
        traceMs,
        trainMs: performance.now() - trainStarted,
        traces: traces.length,
        accepted: report.accepted,
        kept: kept.length,
        teacherTracePassRate: report.meanPassRate,
        tracesFingerprint: generated.fingerprint,
        traceGenerateMs,
        reusedTracePrompts: generated.resumedPrompts,
        steps: result.steps,
        losses: result.history.map((record) => record.loss),
      },
      checkpoints: {
        'distilled-student': { ...student, tensors: model.toCheckpoint().tensors },
      },
    };
  } finally {
    progress.stop();
    trainer.dispose();
    model.dispose();
  }
}

/**
 * The RL teacher's traces for the distillation prompts, in `<outDir>/traces.jsonl`. The file carries
 * @rlvr/distill's fingerprint of the teacher's weights and the sampling settings; a file written by
 * another teacher is never distilled from: it is moved aside (`traces.stale-<fingerprint>.jsonl`,
 * nothing deleted) and the traces are generated again. Exported for its test.
 */
export async function teacherTraces(
  config: RunConfig,
  runtime: Runtime,
  outDir: string,
  teacher: Checkpoint,
  options: {
    problems: readonly { id: string; prompt: string; answer: string }[];
    progressMode: ProgressMode;
    log: (line: string) => void;
  },
): Promise<{
  traces: TraceRecord[];
  fingerprint: string;
  resumedPrompts: number;
  generateMs: number;
}> {
  const started = performance.now();
  const outPath = join(outDir, 'traces.jsonl');
  const prompts = options.problems.map(({ id, prompt, answer }) => ({ id, prompt, answer }));
  const sampler = await createSampler(runtime, teacher);
  const generate = () =>
    generateTraces({
      sampler,
      prompts,
      k: config.distill.tracesPerPrompt,
      sampling: {
        maxNewTokens: config.maxNewTokens,
        temperature: config.distill.temperature,
        seed: config.seed,
      },
      reward: verifiedReward,
      outPath,
      teacher: { weights: teacher },
      batchSize: 64,
      progress:
        options.progressMode === 'bar' ||
        (options.progressMode === 'auto' && Boolean(process.stderr.isTTY) && !process.env.CI),
    });
  let result: Awaited<ReturnType<typeof generateTraces>>;
  try {
    try {
      result = await generate();
    } catch (error) {
      if (!ResumeMismatchError.isInstance(error)) throw error;
      const stale = await moveAside(outPath);
      options.log(
        `[distill-student] ${outPath} was written by another teacher or with other settings (${error.fields.join(', ')}): kept as ${stale}, generating new traces`,
      );
      result = await generate();
    }
  } finally {
    await sampler.close();
  }
  const traces = await readTraces(outPath, {
    fingerprint: result.fingerprint,
    promptIds: prompts.map((prompt) => prompt.id),
  });
  return {
    traces,
    fingerprint: result.fingerprint,
    resumedPrompts: result.resumedPrompts,
    generateMs: performance.now() - started,
  };
}

/** Renames a stale traces file to a free `traces.stale-<fingerprint>[-n].jsonl` next to it. */
async function moveAside(path: string): Promise<string> {
  const header = await readTracesHeader(path);
  const base = path.replace(/\.jsonl$/, `.stale-${header?.fingerprint ?? 'no-header'}`);
  let target = `${base}.jsonl`;
  for (let index = 2; existsSync(target); index++) target = `${base}-${index}.jsonl`;
  await rename(path, target);
  return target;
}
