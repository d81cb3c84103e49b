import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRng } from '@rlvr/core';
import { type Checkpoint, loadCheckpoint, saveCheckpoint } from '@rlvr/model';
import type { TokenSequence } from '@rlvr/trainer';
import { type CheckedRun, checkRun } from './check-run.js';
import { type ClaimsResult, runClaims } from './claims/index.js';
import type { RunConfig } from './config.js';
import { type DistillResult, distillPhase } from './distill.js';
import { evaluateModel, type ModelEvaluation } from './evaluate.js';
import { exportStudentGguf } from './export-gguf.js';
import { type GrpoResult, runGrpo } from './grpo.js';
import { encodeExample, randomCheckpoint } from './models.js';
import { type ProgressMode, phaseProgress } from './progress.js';
import { buildReport, type Report } from './report.js';
import { writeReportHtml } from './report-html.js';
import { runSft } from './sft.js';
import { solveStyled } from './task.js';

export type { DistillResult } from './distill.js';

/** The warm-start traces of a style mix (the same problems and slip stream for every mix). */
export function warmStartSequences(
  checked: Pick<CheckedRun, 'config' | 'splits' | 'tokenizer'>,
  style: RunConfig['warmStart'],
): TokenSequence[] {
  const { config, splits, tokenizer } = checked;
  const slipRng = createRng(config.seed).derive('warm-start-slips');
  return splits.train
    .slice(0, config.warmStart.examples)
    .map((problem) =>
      encodeExample(tokenizer, problem.prompt, solveStyled(problem, slipRng, style)),
    );
}

/**
 * The SFT warm-start of a fresh model of `size` (seed `seed`, + 1 for the student) on
 * `sequences`, with the run's warm-start settings.
 */
export function warmStartModel(
  checked: Pick<CheckedRun, 'config' | 'tokenizerFiles' | 'maxPositions'>,
  size: RunConfig['teacher'],
  label: string,
  sequences: readonly TokenSequence[],
  progressMode: ProgressMode,
) {
  const { config } = checked;
  return runSft({
    checkpoint: randomCheckpoint(size, checked.tokenizerFiles, {
      seed: config.seed + (label === 'student' ? 1 : 0),
      maxPositions: checked.maxPositions,
    }),
    sequences,
    steps: config.warmStart.steps,
    batchSize: config.warmStart.batchSize,
    learningRate: config.warmStart.learningRate,
    seed: config.seed,
    progress: phaseProgress(`warm-start ${label}`, config.warmStart.steps, progressMode),
  });
}

/** Names of the phases, in order. */
export const PHASES = [
  'warm-start-teacher',
  'grpo-teacher',
  'warm-start-student',
  'distill-student',
  'grpo-student',
  'evaluate',
  'claims',
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
  claims: ['teacher', 'warmStart', 'grpo', 'evaluation', 'claims'],
};

/** The result an earlier run of a phase left (whatever its config), if any. */
async function previousResult<T>(file: string): Promise<T | undefined> {
  if (!existsSync(file)) return undefined;
  try {
    return (JSON.parse(await readFile(file, 'utf8')) as PhaseRecord<T>).result;
  } catch {
    return undefined;
  }
}

/** The fingerprint that decides whether a finished phase can be reused. */
function fingerprintOf(config: RunConfig, phase: PhaseName): string {
  const sections = [...BASE_SECTIONS, ...PHASE_SECTIONS[phase]];
  return JSON.stringify(sections.map((section) => [section, config[section]]));
}

/**
 * The whole run: warm-start (SFT) the teacher, GRPO it, warm-start the student the same way, distil
 * the student from the RL teacher's verified traces, train the same student config by GRPO for
 * `grpo.studentSteps` steps (a step budget, reproducible from the seed), evaluate all four on
 * held-out prompts with voting, with `claims.enabled` run the claims phase (see `runClaims`), and
 * write `report.json` and `report.html`. Each phase saves its checkpoint (Hugging Face-style folder with
 * an ONNX export) and a record; re-running with the same config skips finished phases.
 */
export async function runTeacherStudent(options: RunOptions): Promise<Report> {
  const log = options.log ?? ((line: string) => console.error(line));
  const progressMode = options.progress ?? 'auto';
  const started = performance.now();
  // Everything is validated before anything is written or deleted.
  const checked = await checkRun(options.config);
  const { config, runtime, splits } = checked;
  const { vocabSize, teacherParameters, studentParameters } = checked;
  const outDir = config.outDir;
  if (options.fresh) {
    await rm(join(outDir, 'phases'), { recursive: true, force: true });
    await rm(join(outDir, 'traces.jsonl'), { force: true });
  }
  await mkdir(join(outDir, 'phases'), { recursive: true });
  await writeFile(join(outDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  log(
    `backend: tfjs-${runtime.backend.name}, onnxruntime ${config.device === 'cuda' ? 'cuda' : 'cpu'} (${config.workers} workers x ${config.threads} threads)`,
  );
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

  const warmStartTraces = (style: RunConfig['warmStart']) => warmStartSequences(checked, style);
  const warmStartData = warmStartTraces(config.warmStart);
  const warmStart =
    (
      size: RunConfig['teacher'],
      label: string,
      sequences: ReturnType<typeof warmStartTraces> = warmStartData,
    ) =>
    async () => {
      const result = await warmStartModel(checked, size, label, sequences, progressMode);
      return {
        result: {
          losses: result.losses,
          tokens: result.tokens,
          examples: sequences.length,
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
      maxSteps: config.grpo.maxSteps,
      maxNewTokens: config.maxNewTokens,
      seed: config.seed,
      outputDir: join(outDir, 'grpo', 'teacher'),
      label: 'grpo-teacher',
      progress: phaseProgress('GRPO teacher', config.grpo.maxSteps, progressMode),
      log,
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
      previous: await previousResult<DistillResult>(phaseFile('distill-student')),
      log,
    }),
  );

  // 3. Baseline: the same student config trained by GRPO for a fixed number of steps.
  const grpoStudent = await phase('grpo-student', ['rl-student'], async () => {
    const result = await runGrpo({
      runtime,
      checkpoint: await load('sft-student'),
      train: splits.train,
      heldOut: splits.eval,
      config: config.grpo,
      maxSteps: config.grpo.studentSteps,
      maxNewTokens: config.maxNewTokens,
      seed: config.seed + 1,
      outputDir: join(outDir, 'grpo', 'student'),
      label: 'grpo-student',
      log,
      progress: phaseProgress('GRPO student', config.grpo.studentSteps, progressMode),
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

  // 5. The claims (on unless `--no-claims`): ablation arms from the SFT teacher and the thinking-budget sweep.
  // The hacking claim's own SFT teacher when its hedged-answer mix differs from the main one.
  const hackingTeacher = async () => {
    const { hedgeRate, hedgeMaxExtra } = config.claims.hackingWarmStart;
    if (
      hedgeRate === config.warmStart.hedgeRate &&
      hedgeMaxExtra === config.warmStart.hedgeMaxExtra
    ) {
      return undefined;
    }
    log(
      `[claims] warm-start of the hacking arms' teacher (${hedgeRate} hedged, up to ${hedgeMaxExtra} extra digits)`,
    );
    const sequences = warmStartTraces({ ...config.warmStart, hedgeRate, hedgeMaxExtra });
    const { checkpoints } = await warmStart(config.teacher, 'hacking-teacher', sequences)();
    return checkpoints['sft-hacking-teacher']!;
  };
  let claims: ClaimsResult | undefined;
  if (config.claims.enabled) {
    claims = await phase('claims', [], async () => ({
      result: await runClaims({
        config,
        runtime,
        outDir,
        sftTeacher: await load('sft-teacher'),
        hackingTeacher: await hackingTeacher(),
        rlTeacher: await load('rl-teacher'),
        train: splits.train,
        heldOut: splits.eval,
        progressMode,
        log,
      }),
    }));
  }

  // 6. The distilled student leaves as GGUF (llama.cpp / Ollama), replaced only when retrained now.
  const gguf = await exportStudentGguf(
    outDir,
    await load('distilled-student'),
    phases['distill-student']?.resumed !== true,
  );
  log(
    `distilled student as GGUF: ${gguf.path}${gguf.written ? '' : ' (kept from an earlier run)'}`,
  );

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
    claims,
    totalMs: performance.now() - started,
  });
  await writeFile(join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeReportHtml(join(outDir, 'report.html'), report);
  return report;
}
