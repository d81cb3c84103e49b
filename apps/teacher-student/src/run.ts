import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRng, InvalidArgumentError } from '@rlvr/core';
import { distillStudent, filterTraces, generateTraces, readTraces } from '@rlvr/distill';
import { type Checkpoint, createTokenizer, loadCheckpoint, saveCheckpoint } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer } from '@rlvr/trainer';
import type { RunConfig } from './config.js';
import { evaluateModel, type ModelEvaluation } from './evaluate.js';
import { type GrpoResult, runGrpo } from './grpo.js';
import { encodeExample, parametersOf, randomCheckpoint } from './models.js';
import { type ProgressMode, phaseProgress } from './progress.js';
import { buildReport, type Report } from './report.js';
import { writeReportHtml } from './report-html.js';
import { verifiedReward } from './rewards.js';
import { createRuntime, createSampler, type Runtime } from './runtime.js';
import { runSft } from './sft.js';
import { buildTaskTokenizer, makeSplits, solveWithSlips } from './task.js';

/** Names of the phases, in order. */
export const PHASES = [
  'warm-start-teacher',
  'grpo-teacher',
  'warm-start-student',
  'distill-student',
  'grpo-student',
  'evaluate',
] as const;
export type PhaseName = (typeof PHASES)[number];

/** What a finished phase leaves in `<outDir>/phases/<name>.json`. */
export type PhaseRecord<T = unknown> = {
  phase: PhaseName;
  fingerprint: string;
  /** Wall time of the phase when it ran, ms. */
  timeMs: number;
  finishedAt: string;
  result: T;
};

export type WarmStartResult = { losses: number[]; tokens: number; examples: number; steps: number };
export type DistillResult = {
  traceMs: number;
  trainMs: number;
  traces: number;
  accepted: number;
  kept: number;
  teacherTracePassRate: number;
  steps: number;
  losses: number[];
};
export type GrpoPhaseResult = Omit<GrpoResult, 'checkpoint'>;

/** Options of {@link runTeacherStudent}. */
export type RunOptions = {
  config: RunConfig;
  /** Ignore finished phases in the output folder. */
  fresh?: boolean;
  progress?: ProgressMode;
  /** Log lines (phase starts/ends). Default: console.error. */
  log?: (line: string) => void;
};

const BASE_SECTIONS = ['seed', 'task', 'data', 'maxNewTokens', 'device'] as const;
/** The config sections each phase (with everything upstream of it) depends on. */
const PHASE_SECTIONS: Record<PhaseName, readonly (keyof RunConfig)[]> = {
  'warm-start-teacher': ['teacher', 'warmStart'],
  'grpo-teacher': ['teacher', 'warmStart', 'grpo'],
  'warm-start-student': ['student', 'warmStart'],
  'distill-student': ['teacher', 'student', 'warmStart', 'grpo', 'distill'],
  'grpo-student': ['teacher', 'student', 'warmStart', 'grpo', 'distill'],
  evaluate: ['teacher', 'student', 'warmStart', 'grpo', 'distill', 'evaluation'],
};

/** The fingerprint that decides whether a finished phase can be reused. */
function fingerprintOf(config: RunConfig, phase: PhaseName): string {
  const sections = [...BASE_SECTIONS, ...PHASE_SECTIONS[phase]];
  return JSON.stringify(sections.map((section) => [section, config[section]]));
}

/**
 * The whole run: warm-start (SFT) the teacher, GRPO it, warm-start the student the same way, distil
 * the student from the RL teacher's verified traces, train the same student config by GRPO for the
 * distillation's wall-clock time, evaluate all four on held-out prompts with voting, and write
 * `report.json` and `report.html`. Each phase saves its checkpoint (Hugging Face-style folder with
 * an ONNX export) and a record; re-running with the same config skips finished phases.
 */
export async function runTeacherStudent(options: RunOptions): Promise<Report> {
  const { config } = options;
  const log = options.log ?? ((line: string) => console.error(line));
  const progressMode = options.progress ?? 'auto';
  const started = performance.now();
  const outDir = config.outDir;
  if (options.fresh) {
    await rm(join(outDir, 'phases'), { recursive: true, force: true });
    await rm(join(outDir, 'traces.jsonl'), { force: true });
  }
  await mkdir(join(outDir, 'phases'), { recursive: true });
  await writeFile(join(outDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);

  const runtime = await createRuntime(config);
  log(
    `backend: tfjs-${runtime.backend.name}, onnxruntime ${config.device === 'cuda' ? 'cuda' : 'cpu'} (${config.workers} workers x ${config.threads} threads)`,
  );
  const tokenizerFiles = buildTaskTokenizer();
  const tokenizer = createTokenizer(tokenizerFiles);
  const vocabSize = tokenizer.vocabSize;
  const teacherParameters = parametersOf(config.teacher, vocabSize);
  const studentParameters = parametersOf(config.student, vocabSize);
  if (studentParameters * 4 > teacherParameters) {
    throw new InvalidArgumentError({
      parameter: 'student',
      functionName: 'teacher-student',
      value: config.student,
      expected: `a size with at most 1/4 of the teacher's ${teacherParameters} parameters (got ${studentParameters})`,
    });
  }
  const splits = makeSplits(config.task, { ...config.data, seed: config.seed });
  // Prompt + completion never exceed this many positions.
  const maxPositions = 2 * config.task.maxTerms + 8 + config.maxNewTokens + 8;
  log(
    `task: (a±b±…)%10 with ${config.task.minTerms}-${config.task.maxTerms} terms; ${splits.train.length} train / ${splits.eval.length} held-out prompts; vocab ${vocabSize}`,
  );
  log(
    `teacher ${teacherParameters.toLocaleString('en-US')} params, student ${studentParameters.toLocaleString('en-US')} params (${((100 * studentParameters) / teacherParameters).toFixed(1)}%)`,
  );

  const phaseFile = (phase: PhaseName) => join(outDir, 'phases', `${phase}.json`);
  const checkpointDir = (name: string) => join(outDir, 'checkpoints', name);
  const phases: Partial<Record<PhaseName, PhaseRecord & { resumed: boolean }>> = {};

  async function phase<T>(
    name: PhaseName,
    checkpointNames: string[],
    body: () => Promise<{ result: T; checkpoints?: Record<string, Checkpoint> }>,
  ): Promise<T> {
    const file = phaseFile(name);
    const fingerprint = fingerprintOf(config, name);
    if (existsSync(file)) {
      const record = JSON.parse(await readFile(file, 'utf8')) as PhaseRecord<T>;
      const haveCheckpoints = checkpointNames.every((checkpoint) =>
        existsSync(join(checkpointDir(checkpoint), 'config.json')),
      );
      if (record.fingerprint === fingerprint && haveCheckpoints) {
        log(`[${name}] already finished (${(record.timeMs / 1000).toFixed(1)} s): skipped`);
        phases[name] = { ...record, resumed: true };
        return record.result;
      }
    }
    log(`[${name}] started`);
    const phaseStarted = performance.now();
    const { result, checkpoints } = await body();
    const timeMs = performance.now() - phaseStarted;
    for (const [checkpointName, checkpoint] of Object.entries(checkpoints ?? {})) {
      await saveCheckpoint(checkpointDir(checkpointName), checkpoint, { onnx: true });
    }
    const record: PhaseRecord<T> = {
      phase: name,
      fingerprint,
      timeMs,
      finishedAt: new Date().toISOString(),
      result,
    };
    await writeFile(file, `${JSON.stringify(record)}\n`);
    phases[name] = { ...record, resumed: false };
    log(`[${name}] done in ${(timeMs / 1000).toFixed(1)} s`);
    return result;
  }
  const load = (name: string) => loadCheckpoint(checkpointDir(name));

  const slipRng = createRng(config.seed).derive('warm-start-slips');
  const warmStartData = splits.train
    .slice(0, config.warmStart.examples)
    .map((problem) =>
      encodeExample(
        tokenizer,
        problem.prompt,
        solveWithSlips(problem, slipRng, config.warmStart.slipRate),
      ),
    );
  const warmStart = (size: RunConfig['teacher'], label: string) => async () => {
    const result = await runSft({
      checkpoint: randomCheckpoint(size, tokenizerFiles, {
        seed: config.seed + (label === 'teacher' ? 0 : 1),
        maxPositions,
      }),
      sequences: warmStartData,
      steps: config.warmStart.steps,
      batchSize: config.warmStart.batchSize,
      learningRate: config.warmStart.learningRate,
      seed: config.seed,
      progress: phaseProgress(`warm-start ${label}`, config.warmStart.steps, progressMode),
    });
    return {
      result: {
        losses: result.losses,
        tokens: result.tokens,
        examples: warmStartData.length,
        steps: config.warmStart.steps,
      } satisfies WarmStartResult,
      checkpoints: { [`sft-${label}`]: result.checkpoint },
    };
  };

  // 1. Teacher: limited SFT warm-start, then GRPO.
  const teacherWarmStart = await phase(
    'warm-start-teacher',
    ['sft-teacher'],
    warmStart(config.teacher, 'teacher'),
  );
  const grpoTeacher = await phase('grpo-teacher', ['rl-teacher'], async () => {
    const result = await runGrpo({
      runtime,
      checkpoint: await load('sft-teacher'),
      train: splits.train,
      heldOut: splits.eval,
      config: config.grpo,
      maxNewTokens: config.maxNewTokens,
      seed: config.seed,
      progress: phaseProgress('GRPO teacher', config.grpo.steps, progressMode),
    });
    const { checkpoint, ...rest } = result;
    return { result: rest satisfies GrpoPhaseResult, checkpoints: { 'rl-teacher': checkpoint } };
  });

  // 2. Student: the same warm-start, then distillation from the RL teacher's verified traces.
  const studentWarmStart = await phase(
    'warm-start-student',
    ['sft-student'],
    warmStart(config.student, 'student'),
  );
  const distill = await phase('distill-student', ['distilled-student'], async () =>
    distillPhase(config, runtime, outDir, await load('rl-teacher'), await load('sft-student'), {
      problems: splits.train.slice(0, config.distill.prompts),
      progressMode,
    }),
  );

  // 3. Baseline: the same student config trained by GRPO for the distillation's wall-clock time.
  const distillTimeMs = distill.traceMs + distill.trainMs;
  const grpoStudent = await phase('grpo-student', ['rl-student'], async () => {
    const result = await runGrpo({
      runtime,
      checkpoint: await load('sft-student'),
      train: splits.train,
      heldOut: splits.eval,
      config: { ...config.grpo, steps: 100_000, evalEvery: config.grpo.evalEvery },
      maxNewTokens: config.maxNewTokens,
      seed: config.seed + 1,
      budgetMs: distillTimeMs,
      progress: phaseProgress(
        'GRPO student (s of budget)',
        Math.round(distillTimeMs / 1000),
        progressMode,
      ),
    });
    const { checkpoint, ...rest } = result;
    return { result: rest satisfies GrpoPhaseResult, checkpoints: { 'rl-student': checkpoint } };
  });

  // 4. Held-out evaluation with test-time voting.
  const models = [
    { name: 'SFT teacher', checkpoint: 'sft-teacher', parameters: teacherParameters },
    { name: 'RL teacher', checkpoint: 'rl-teacher', parameters: teacherParameters },
    { name: 'distilled student', checkpoint: 'distilled-student', parameters: studentParameters },
    { name: 'RL-only student', checkpoint: 'rl-student', parameters: studentParameters },
  ];
  const evaluations = await phase('evaluate', [], async () => {
    const progress = phaseProgress('evaluate', models.length, progressMode);
    const results: ModelEvaluation[] = [];
    for (const model of models) {
      results.push(
        await evaluateModel({
          name: model.name,
          parameters: model.parameters,
          runtime,
          checkpoint: await load(model.checkpoint),
          problems: splits.eval,
          samples: config.evaluation.samples,
          temperature: config.evaluation.temperature,
          maxNewTokens: config.maxNewTokens,
          seed: config.seed,
        }),
      );
      progress.update(results.length, model.name);
    }
    progress.stop();
    return { result: results };
  });

  const report = buildReport({
    config,
    runtime,
    vocabSize,
    teacherParameters,
    studentParameters,
    splits: { train: splits.train.length, eval: splits.eval.length },
    phases,
    teacherWarmStart,
    studentWarmStart,
    grpoTeacher,
    grpoStudent,
    distill,
    evaluations,
    totalMs: performance.now() - started,
  });
  await writeFile(join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeReportHtml(join(outDir, 'report.html'), report);
  return report;
}

async function distillPhase(
  config: RunConfig,
  runtime: Runtime,
  outDir: string,
  teacher: Checkpoint,
  student: Checkpoint,
  options: {
    problems: readonly { id: string; prompt: string; answer: string }[];
    progressMode: ProgressMode;
  },
): Promise<{ result: DistillResult; checkpoints: Record<string, Checkpoint> }> {
  const traceStarted = performance.now();
  const sampler = await createSampler(runtime, teacher);
  const outPath = join(outDir, 'traces.jsonl');
  try {
    await generateTraces({
      sampler,
      prompts: options.problems.map(({ id, prompt, answer }) => ({ id, prompt, answer })),
      k: config.distill.tracesPerPrompt,
      sampling: {
        maxNewTokens: config.maxNewTokens,
        temperature: config.distill.temperature,
        seed: config.seed,
      },
      reward: verifiedReward,
      outPath,
      batchSize: 64,
      progress:
        options.progressMode === 'bar' ||
        (options.progressMode === 'auto' && Boolean(process.stderr.isTTY) && !process.env.CI),
    });
  } finally {
    await sampler.close();
  }
  const traces = await readTraces(outPath);
  const { kept, report } = filterTraces(traces, {
    maxPerPrompt: config.distill.maxPerPrompt,
    prefer: 'shorter',
    dropTruncated: true,
    dedupeThreshold: 1,
  });
  const traceMs = performance.now() - traceStarted;
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
