import { availableParallelism, cpus } from 'node:os';
import { type ClaimsResult, claimTargets } from './claims/index.js';
import type { Target } from './claims/targets.js';
import type { RunConfig } from './config.js';
import type { ModelEvaluation } from './evaluate.js';
import type {
  DistillResult,
  GrpoPhaseResult,
  PhaseName,
  PhaseRecord,
  WarmStartResult,
} from './run.js';
import type { Runtime } from './runtime.js';

export type { Target } from './claims/targets.js';

/** Everything the run measured: `report.json`. */
export type Report = {
  version: 1;
  generatedAt: string;
  config: RunConfig;
  environment: {
    node: string;
    platform: string;
    cpu: string;
    cores: number;
    trainingBackend: string;
    rolloutExecutionProvider: string;
    /** The @rlvr/rollout engine the samplers chose for the teacher and the student. */
    rolloutEngines: { teacher: string; student: string };
  };
  task: { description: string; vocabSize: number; trainPrompts: number; evalPrompts: number };
  models: {
    teacher: { parameters: number; size: RunConfig['teacher'] };
    student: { parameters: number; size: RunConfig['student'] };
    studentToTeacherRatio: number;
  };
  timings: {
    /** Wall time per phase, seconds (`resumed`: taken from an earlier run of the same config). */
    phases: { name: PhaseName; seconds: number; resumed: boolean }[];
    /** Sum of the phase times, seconds (what a run from scratch takes, minus start-up). */
    phasesSeconds: number;
    /** Wall time of this invocation, seconds. */
    wallSeconds: number;
  };
  warmStart: { teacher: WarmStartResult; student: WarmStartResult };
  grpo: { teacher: GrpoPhaseResult; student: GrpoPhaseResult };
  distill: DistillResult;
  evaluation: ModelEvaluation[];
  /** The claims phase's measurements, absent when it did not run (`--no-claims`). */
  claims?: ClaimsResult;
  headline: {
    sftTeacherPassAt1: number;
    rlTeacherPassAt1: number;
    rlGainPoints: number;
    distilledStudentPassAt1: number;
    rlOnlyStudentPassAt1: number;
    distilledOverTeacher: number;
    rlTeacherMajAt8: number;
    rlTeacherMajAt8MinusPassAt1Points: number;
    /** Mean training reward of the first and last 20% of teacher GRPO steps. */
    teacherRewardFirst: number;
    teacherRewardLast: number;
  };
  targets: Target[];
};

const point = (evaluation: ModelEvaluation | undefined, k: number) =>
  evaluation?.curve.find((entry) => entry.k === k);

const meanOf = (values: number[]) =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

/** Mean reward over the first and last fifth of a GRPO history. */
export function rewardFirstLast(history: GrpoPhaseResult['history']): [number, number] {
  const count = Math.max(1, Math.floor(history.length / 5));
  return [
    meanOf(history.slice(0, count).map((record) => record.reward)),
    meanOf(history.slice(-count).map((record) => record.reward)),
  ];
}

/** Assembles `report.json` from the phase results. */
export function buildReport(input: {
  config: RunConfig;
  runtime: Runtime;
  vocabSize: number;
  teacherParameters: number;
  studentParameters: number;
  splits: { train: number; eval: number };
  phases: Partial<Record<PhaseName, PhaseRecord & { resumed: boolean }>>;
  teacherWarmStart: WarmStartResult;
  studentWarmStart: WarmStartResult;
  grpoTeacher: GrpoPhaseResult;
  grpoStudent: GrpoPhaseResult;
  distill: DistillResult;
  evaluations: ModelEvaluation[];
  claims?: ClaimsResult | undefined;
  totalMs: number;
}): Report {
  const byName = (name: string) => input.evaluations.find((entry) => entry.name === name);
  const sft = point(byName('SFT teacher'), 1)?.passAtK ?? 0;
  const rl = point(byName('RL teacher'), 1)?.passAtK ?? 0;
  const distilled = point(byName('distilled student'), 1)?.passAtK ?? 0;
  const rlStudent = point(byName('RL-only student'), 1)?.passAtK ?? 0;
  const maj8 = point(byName('RL teacher'), 8)?.majAtK ?? 0;
  const phases = Object.values(input.phases).map((record) => ({
    name: record!.phase,
    seconds: record!.timeMs / 1000,
    resumed: record!.resumed,
  }));
  const phasesSeconds = phases.reduce((sum, entry) => sum + entry.seconds, 0);
  const [teacherRewardFirst, teacherRewardLast] = rewardFirstLast(input.grpoTeacher.history);
  const headline = {
    sftTeacherPassAt1: sft,
    rlTeacherPassAt1: rl,
    rlGainPoints: 100 * (rl - sft),
    distilledStudentPassAt1: distilled,
    rlOnlyStudentPassAt1: rlStudent,
    distilledOverTeacher: rl > 0 ? distilled / rl : 0,
    rlTeacherMajAt8: maj8,
    rlTeacherMajAt8MinusPassAt1Points: 100 * (maj8 - rl),
    teacherRewardFirst,
    teacherRewardLast,
  };
  const cpu = cpus()[0]?.model ?? 'unknown';
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    config: input.config,
    environment: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpu,
      cores: availableParallelism(),
      trainingBackend: `tfjs-${input.runtime.backend.name} (${input.runtime.backend.module})`,
      rolloutExecutionProvider: input.config.device === 'cuda' ? 'cuda' : 'cpu',
      rolloutEngines: {
        teacher: input.grpoTeacher.engine ?? 'unknown',
        student: input.grpoStudent.engine ?? 'unknown',
      },
    },
    task: {
      description:
        'Chains of single-digit additions/subtractions modulo 10, e.g. (3+5-9+2)%10= → 1; the reference chain of thought writes the running value after each operation, in the R1 format <think>…</think><answer>…</answer>. The warm-start traces are written by a sloppy solver that slips on each step with probability config.warmStart.slipRate (an imperfect cold start).',
      vocabSize: input.vocabSize,
      trainPrompts: input.splits.train,
      evalPrompts: input.splits.eval,
    },
    models: {
      teacher: { parameters: input.teacherParameters, size: input.config.teacher },
      student: { parameters: input.studentParameters, size: input.config.student },
      studentToTeacherRatio: input.studentParameters / input.teacherParameters,
    },
    timings: { phases, phasesSeconds, wallSeconds: input.totalMs / 1000 },
    warmStart: { teacher: input.teacherWarmStart, student: input.studentWarmStart },
    grpo: { teacher: input.grpoTeacher, student: input.grpoStudent },
    distill: input.distill,
    evaluation: input.evaluations,
    ...(input.claims === undefined ? {} : { claims: input.claims }),
    headline,
    targets: [
      {
        name: 'GRPO gain',
        goal: 'RL teacher pass@1 ≥ SFT teacher pass@1 + 15 points',
        value: headline.rlGainPoints,
        unit: 'points',
        met: headline.rlGainPoints >= 15,
      },
      {
        name: 'distillation retention',
        goal: 'distilled student pass@1 ≥ 90% of the RL teacher',
        value: headline.distilledOverTeacher,
        unit: '× teacher',
        met: headline.distilledOverTeacher >= 0.9,
      },
      {
        name: 'distillation vs RL on the student',
        goal: `distilled student pass@1 > RL-only student pass@1 (${input.config.grpo.studentSteps} GRPO steps)`,
        value: 100 * (distilled - rlStudent),
        unit: 'points',
        met: distilled > rlStudent,
      },
      {
        name: 'test-time compute',
        goal: 'RL teacher maj@8 ≥ pass@1 + 5 points',
        value: headline.rlTeacherMajAt8MinusPassAt1Points,
        unit: 'points',
        met: headline.rlTeacherMajAt8MinusPassAt1Points >= 5,
      },
      {
        name: 'run time',
        goal: 'all phases (claims included) ≤ 15 minutes',
        value: phasesSeconds / 60,
        unit: 'minutes',
        met: phasesSeconds <= 15 * 60,
      },
      ...claimTargets(input.grpoTeacher, input.claims),
    ],
  };
}
