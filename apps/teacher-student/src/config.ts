import {
  InvalidArgumentError,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { createTokenizer } from '@rlvr/model';
import { GRPO_CONFIG_KEYS, type GrpoConfig as TrainerGrpoConfig } from '@rlvr/trainer';
import { parametersOf } from './models.js';
import { buildTaskTokenizer, type TaskConfig, validateTaskConfig } from './task.js';

/** A Llama-style model size (Hugging Face field meanings). */
export type ModelSize = {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  intermediateSize: number;
};

/** `GrpoConfig` keys the app sets itself (or deliberately does not expose). */
const APP_CONTROLLED_KEYS = [
  'seed',
  'maxNewTokens',
  'outputDir',
  'progress',
  'quiet',
  'syncWeights',
  'maxStaleness',
] as const;
type AppControlledKey = (typeof APP_CONTROLLED_KEYS)[number];

/**
 * Keys of @rlvr/trainer's `GrpoConfig` that a run config's `grpo` section may set; they are passed
 * to `createGrpoTrainer` as they are (same names, same meanings, same defaults where the app does
 * not set them). `maxNewTokens` and `seed` come from the top level of the run config, and the app
 * sets `outputDir`, `progress` and `quiet` itself. Derived from the trainer's own
 * `GRPO_CONFIG_KEYS`, so the two lists cannot drift.
 */
export const TRAINER_GRPO_KEYS = GRPO_CONFIG_KEYS.filter(
  (key): key is Exclude<(typeof GRPO_CONFIG_KEYS)[number], AppControlledKey> =>
    !(APP_CONTROLLED_KEYS as readonly string[]).includes(key),
);

/** The app's own keys of the `grpo` section (not trainer settings). */
export const APP_GRPO_KEYS = ['formatWeight', 'evalEvery', 'evalPrompts', 'studentSteps'] as const;

/** The trainer settings a run config may carry (see {@link TRAINER_GRPO_KEYS}). */
export type TrainerGrpoSettings = Pick<TrainerGrpoConfig, (typeof TRAINER_GRPO_KEYS)[number]>;

/**
 * GRPO settings of the RL phases: @rlvr/trainer's `GrpoConfig` names (`maxSteps`, `beta`,
 * `dynamicSampling`, `lossAggregation`, `schedule`, …) plus three of the app's own.
 */
export type GrpoConfig = TrainerGrpoSettings & {
  /** Generation steps of the teacher's GRPO. */
  maxSteps: number;
  /**
   * Generation steps of the RL-only student's GRPO (a step budget, not wall-clock, so the baseline
   * is reproducible from the seed).
   */
  studentSteps: number;
  /** Groups (prompts) trained on per step. */
  promptsPerStep: number;
  /** G: samples per prompt. */
  groupSize: number;
  /** Weight of the format reward next to correctness (weight 1). */
  formatWeight: number;
  /** Held-out greedy accuracy every this many steps (0: never). */
  evalEvery: number;
  /** Held-out prompts for that check (sampled pass@1 and greedy accuracy). */
  evalPrompts: number;
};

/** The whole run. */
export type RunConfig = {
  seed: number;
  outDir: string;
  device: 'cpu' | 'cuda';
  quick: boolean;
  task: TaskConfig;
  data: { train: number; eval: number };
  /** Longest completion, in tokens. */
  maxNewTokens: number;
  teacher: ModelSize;
  student: ModelSize;
  /** The deliberately limited SFT cold start (same data and steps for teacher and student). */
  warmStart: {
    examples: number;
    steps: number;
    batchSize: number;
    learningRate: number;
    /**
     * Probability that the solver writing the warm-start traces slips on a step (writes a wrong
     * digit and continues from it): an imperfect cold start, see `solveWithSlips`.
     */
    slipRate: number;
    /** Probability of a short trace (no intermediate steps), see `solveStyled`. */
    shortRate: number;
    /** Probability of a hedged answer list, see `solveStyled`. */
    hedgeRate: number;
    /** Most other digits a hedged list adds (1 to this many), see `solveStyled`. */
    hedgeMaxExtra: number;
    /**
     * Probability of a verbose trace (the question restated before the chain), see
     * `solveStyled`; `shortRate + verboseRate` ≤ 1.
     */
    verboseRate: number;
    /** Per-step slip probability of the verbose traces (a little more careful), see `solveStyled`. */
    verboseSlipRate: number;
  };
  grpo: GrpoConfig;
  /**
   * The claims phase (on by default; `--no-claims` skips it): extra GRPO arms from the SFT teacher
   * and a thinking-budget sweep.
   */
  claims: {
    enabled: boolean;
    /**
     * GRPO steps of each arm (default `grpo.maxSteps`; else a multiple of grpo.evalEvery below
     * it): each arm is compared with the teacher run's held-out check at this step.
     */
    steps?: number;
    /** `penaltyFactor` of the length-penalty arm's soft length penalty (`overlong`). */
    lengthPenaltyFactor: number;
    /**
     * Completion length (tokens) from which the length-penalty arm's penalty starts, falling
     * linearly to −`lengthPenaltyFactor` at `maxNewTokens` (`overlong.bufferLength` =
     * `maxNewTokens` − this); below `maxNewTokens`.
     */
    lengthPenaltyOnset: number;
    /**
     * The warm-start's hedged-answer mix for the reward-hacking claim (a): when it differs from
     * `warmStart`'s, the claim gets its own SFT teacher (same data, init and steps, this mix) and
     * its own control (the same GRPO run rewarded by the verifier), so the exploit's prevalence
     * does not change the main run.
     */
    hackingWarmStart: { hedgeRate: number; hedgeMaxExtra: number };
    /**
     * Naive-reward arms of (a), each with its own GRPO seed (`seed`, `seed + 1`, …) from the same
     * SFT teacher; the row is the mean of their gaps (≥ 1). Which route GRPO takes first — the
     * hedges or honest slip removal — is a race that one seed (or float rounding) can flip.
     */
    hackingSeeds: number;
    /**
     * `groupSize` of the dynamic-sampling claim's two arms (b), on and off (≥ 2). Smaller groups
     * are more often all-correct or all-wrong, so the filter has groups to drop. When it is
     * `grpo.groupSize` and the run's `dynamicSampling` is on, the teacher run is the "on" arm.
     */
    dynamicSamplingGroupSize: number;
    /**
     * On/off pairs of (b), each with its own GRPO seed (data order and sampling): `seed`,
     * `seed + 1`, …; the row compares the mean of their last held-out checks (≥ 1).
     */
    dynamicSamplingSeeds: number;
    /**
     * GRPO steps of each (b) arm, continuing the RL teacher: late training, where most groups are
     * all-correct (the regime the filter is for) (≥ 1).
     */
    dynamicSamplingSteps: number;
  };
  distill: {
    /** Training prompts the RL teacher writes traces for. */
    prompts: number;
    /** Traces per prompt. */
    tracesPerPrompt: number;
    /** Verified traces kept per prompt. */
    maxPerPrompt: number;
    /** Passes over the kept traces. */
    epochs: number;
    batchSize: number;
    learningRate: number;
    temperature: number;
  };
  evaluation: { samples: number; temperature: number };
  /** Rollout worker threads and ORT threads per worker. */
  workers: number;
  threads: number;
};

/** The default run (≤ 15 minutes on a 2-core CPU machine). */
export const DEFAULT_CONFIG: RunConfig = {
  seed: 1,
  outDir: 'runs/teacher-student',
  device: 'cpu',
  quick: false,
  task: { minTerms: 3, maxTerms: 6, operators: ['+', '-'], termMax: 3 },
  data: { train: 4000, eval: 200 },
  maxNewTokens: 60,
  teacher: { hiddenSize: 96, layers: 3, heads: 4, kvHeads: 2, intermediateSize: 256 },
  student: { hiddenSize: 64, layers: 2, heads: 2, kvHeads: 1, intermediateSize: 128 },
  warmStart: {
    examples: 2000,
    steps: 600,
    batchSize: 32,
    learningRate: 3e-3,
    slipRate: 0.2,
    shortRate: 0.1,
    hedgeRate: 0.05,
    hedgeMaxExtra: 3,
    verboseRate: 0.5,
    // 0.1 left seed 3's SFT teacher with a small verbose edge (47.8% vs 42.5% correct), and GRPO
    // dropped the style: (c) and (e) failed there
    verboseSlipRate: 0.05,
  },
  grpo: {
    maxSteps: 30,
    studentSteps: 180,
    promptsPerStep: 16,
    groupSize: 8,
    temperature: 1,
    beta: 0.001,
    klEstimator: 'k3',
    epsilonLow: 0.2,
    epsilonHigh: 0.28,
    lossAggregation: 'token-mean',
    dynamicSampling: { minStd: 1e-6, maxRounds: 3 },
    maskTruncatedCompletions: false,
    schedule: { learningRate: 3e-4, schedule: 'constant', warmupSteps: 5 },
    maxGradNorm: 1,
    microBatchSize: 64,
    formatWeight: 0.2,
    evalEvery: 10,
    evalPrompts: 128,
  },
  claims: {
    // on by default: the README's main command shows every claim (`--no-claims` skips them)
    enabled: true,
    lengthPenaltyFactor: 1.5,
    // from 4 tokens on, the penalty made a guess without steps (~6 tokens) pay better than a plain
    // chain on seed 3's hard prompts (sampled pass@1 there 18.9%); from 30, only tokens past a
    // plain chain's length cost
    lengthPenaltyOnset: 30,
    // with the main mix (5% hedged, 1–3 extra digits) seed 1's naive arm never amplified hedging,
    // with 10% of 1–4 seed 3's did not
    // with 1–6 extra digits one arm per run gave +5.9 and −1.4 on seeds 1 and 2 (seed 2's took
    // the honest route), three arms +16.2 and +5.9, five on seed 2 +5.3: lists that can cover
    // every digit pay more than removing slips honestly, and three arms gave +12.3 and +33.3
    hackingWarmStart: { hedgeRate: 0.15, hedgeMaxExtra: 9 },
    hackingSeeds: 3,
    // with the run's 8 samples per prompt, seed 3's groups were zero-variance 3% of the time and
    // on/off ended 9.2 points apart the wrong way (trajectory noise); with 4, 17-21%: +7.2
    dynamicSamplingGroupSize: 4,
    // from the SFT teacher (a fifth of the groups zero-variance) one pair per seed moved with
    // trajectory noise (seed 1: +7.2, then −1.6 with other float rounding; 3 pairs −1.6, +2.5,
    // −4.5); continuing the RL teacher (~60% zero-variance) 3 pairs gave +5.8, +16.0, +3.3
    dynamicSamplingSeeds: 3,
    dynamicSamplingSteps: 20,
  },
  distill: {
    prompts: 2000,
    tracesPerPrompt: 4,
    maxPerPrompt: 1,
    // 16 epochs left seed 1's student before its loss drop (26.5% = 0.36x the teacher, loss 0.145);
    // with 32 both seeds' students pass the teacher (1.23x, 1.25x)
    epochs: 32,
    batchSize: 32,
    // 6e-3 was on the edge of stability: the same teacher traces gave a student at 0.44-0.71x the
    // teacher depending on float rounding (matmul engine); 3e-3 gave 1.26x (loss 0.012 vs 0.085)
    learningRate: 3e-3,
    temperature: 1,
  },
  evaluation: { samples: 16, temperature: 1 },
  workers: 2,
  threads: 1,
};

/** `--quick`: CI-sized (a few minutes on a loaded 2-core machine), same phases. */
export const QUICK_OVERRIDES: DeepPartial<RunConfig> = {
  quick: true,
  task: { minTerms: 2, maxTerms: 3, termMax: 4 },
  data: { train: 600, eval: 48 },
  maxNewTokens: 32,
  teacher: { hiddenSize: 64, layers: 2, heads: 2, kvHeads: 1, intermediateSize: 160 },
  student: { hiddenSize: 32, layers: 1, heads: 2, kvHeads: 1, intermediateSize: 64 },
  // No verbose traces: with them the 64x2 teacher did not learn the arithmetic in 1,400 steps
  // (held-out sampled pass@1 8%, against 62% without), as with a larger short/hedged mix before.
  warmStart: { examples: 600, steps: 1400, batchSize: 32, verboseRate: 0 },
  grpo: { maxSteps: 40, studentSteps: 10, promptsPerStep: 16, evalEvery: 10, evalPrompts: 32 },
  // the quick warm-start's own mix: no second SFT teacher
  // (no verbose traces: the penalty from 4 tokens, as before, keeps the quick arm unchanged)
  claims: {
    steps: 20,
    dynamicSamplingSteps: 10,
    lengthPenaltyOnset: 4,
    hackingWarmStart: { hedgeRate: 0.05, hedgeMaxExtra: 3 },
    hackingSeeds: 1,
  },
  distill: { prompts: 300, tracesPerPrompt: 4, epochs: 3, learningRate: 6e-3 },
  evaluation: { samples: 16 },
  workers: 1,
};

/** GRPO steps of each claims arm: `claims.steps`, by default the teacher run's `grpo.maxSteps`. */
export function claimSteps(config: Pick<RunConfig, 'claims' | 'grpo'>): number {
  return config.claims.steps ?? config.grpo.maxSteps;
}

export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[]
    ? T[K]
    : T[K] extends object
      ? DeepPartial<T[K]>
      : T[K];
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Deep merge of plain objects (arrays and scalars replace). */
export function mergeConfig<T>(base: T, override: DeepPartial<T> | undefined): T {
  if (override === undefined) return base;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(override as Record<string, unknown>)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeConfig(current, value) : value;
  }
  return out as T;
}

const FN = 'teacher-student';

/** The known keys of each section of a {@link RunConfig} (`grpo`: see {@link TRAINER_GRPO_KEYS}). */
const KNOWN_KEYS: Record<string, readonly string[]> = {
  '': Object.keys(DEFAULT_CONFIG),
  task: ['minTerms', 'maxTerms', 'operators', 'termMax'],
  data: ['train', 'eval'],
  teacher: ['hiddenSize', 'layers', 'heads', 'kvHeads', 'intermediateSize'],
  student: ['hiddenSize', 'layers', 'heads', 'kvHeads', 'intermediateSize'],
  warmStart: Object.keys(DEFAULT_CONFIG.warmStart),
  grpo: [...TRAINER_GRPO_KEYS, ...APP_GRPO_KEYS],
  'grpo.schedule': [
    'learningRate',
    'schedule',
    'warmupSteps',
    'totalSteps',
    'minLearningRateRatio',
  ],
  'grpo.dynamicSampling': ['minStd', 'maxRounds'],
  claims: [...Object.keys(DEFAULT_CONFIG.claims), 'steps'],
  'claims.hackingWarmStart': ['hedgeRate', 'hedgeMaxExtra'],
  distill: Object.keys(DEFAULT_CONFIG.distill),
  evaluation: Object.keys(DEFAULT_CONFIG.evaluation),
};

/** Names this app used before it took @rlvr/trainer's `GrpoConfig` names (for the hint only). */
const GRPO_ALIASES: Record<string, string> = {
  steps: 'maxSteps',
  klCoefficient: 'beta',
  kl_coef: 'beta',
  maxResampleRounds: 'dynamicSampling',
  maskTruncated: 'maskTruncatedCompletions',
  learningRate: 'schedule',
  aggregation: 'lossAggregation',
};

/**
 * Throws `UNKNOWN_OPTION` for a key outside the known ones of its section, naming it and the
 * closest valid key (`grpo.klCoefficient`: did you mean 'beta'?). Sections must be objects.
 */
export function checkKnownKeys(value: unknown, path = ''): void {
  const known = KNOWN_KEYS[path];
  if (known === undefined) return;
  validateOptions(value, {
    parameter: path,
    functionName: FN,
    known,
    ...(path === 'grpo' ? { aliases: GRPO_ALIASES } : {}),
  });
  if (value === undefined) return;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const childPath = path ? `${path}.${key}` : key;
    if (KNOWN_KEYS[childPath] === undefined) continue;
    // `dynamicSampling: true | false` is the trainer's shorthand.
    if (childPath === 'grpo.dynamicSampling' && typeof child === 'boolean') continue;
    if (!isPlainObject(child)) {
      throw new InvalidArgumentError({
        parameter: childPath,
        functionName: FN,
        value: child,
        expected: 'an object',
      });
    }
    checkKnownKeys(child, childPath);
  }
}
function validateSize(size: ModelSize, name: string): ModelSize {
  const int = (key: keyof ModelSize, min: number) =>
    validateInteger(size[key], { parameter: `${name}.${key}`, functionName: FN, min });
  const heads = int('heads', 1);
  const kvHeads = int('kvHeads', 1);
  const hiddenSize = int('hiddenSize', 2);
  if (hiddenSize % heads !== 0 || heads % kvHeads !== 0 || (hiddenSize / heads) % 2 !== 0) {
    throw new InvalidArgumentError({
      parameter: name,
      functionName: FN,
      value: size,
      expected: 'heads dividing hiddenSize into an even head size, and kvHeads dividing heads',
    });
  }
  return {
    hiddenSize,
    layers: int('layers', 1),
    heads,
    kvHeads,
    intermediateSize: int('intermediateSize', 1),
  };
}

/** Validates a complete config; every error names the field (e.g. `grpo.groupSize`). */
export function validateConfig(config: RunConfig): RunConfig {
  checkKnownKeys(config);
  const int = (value: number, parameter: string, min: number) =>
    validateInteger(value, { parameter, functionName: FN, min });
  const num = (value: number, parameter: string, min: number) =>
    validateNumber(value, { parameter, functionName: FN, min });
  int(config.seed, 'seed', 0);
  if (typeof config.outDir !== 'string' || config.outDir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'outDir',
      functionName: FN,
      value: config.outDir,
      expected: 'a folder path',
    });
  }
  validateOneOf(config.device, ['cpu', 'cuda'], { parameter: 'device', functionName: FN });
  validateTaskConfig(config.task, FN);
  int(config.data.train, 'data.train', 1);
  int(config.data.eval, 'data.eval', 1);
  int(config.maxNewTokens, 'maxNewTokens', 4);
  validateSize(config.teacher, 'teacher');
  validateSize(config.student, 'student');
  int(config.warmStart.examples, 'warmStart.examples', 1);
  int(config.warmStart.steps, 'warmStart.steps', 0);
  int(config.warmStart.batchSize, 'warmStart.batchSize', 1);
  num(config.warmStart.learningRate, 'warmStart.learningRate', 0);
  validateNumber(config.warmStart.slipRate, {
    parameter: 'warmStart.slipRate',
    functionName: FN,
    min: 0,
    max: 1,
  });
  // The trainer's own settings are checked by @rlvr/trainer itself (`checkRun` builds a trainer on
  // a tiny model before anything is written); these are the ones the app reads.
  int(config.grpo.maxSteps, 'grpo.maxSteps', 1);
  num(config.grpo.formatWeight, 'grpo.formatWeight', 0);
  int(config.grpo.evalEvery, 'grpo.evalEvery', 0);
  int(config.grpo.evalPrompts, 'grpo.evalPrompts', 1);
  int(config.grpo.studentSteps, 'grpo.studentSteps', 1);
  const rate = (value: number, parameter: string) =>
    validateNumber(value, { parameter, functionName: FN, min: 0, max: 1 });
  rate(config.warmStart.shortRate, 'warmStart.shortRate');
  rate(config.warmStart.hedgeRate, 'warmStart.hedgeRate');
  validateInteger(config.warmStart.hedgeMaxExtra, {
    parameter: 'warmStart.hedgeMaxExtra',
    functionName: FN,
    min: 1,
    max: 9,
  });
  rate(config.warmStart.verboseRate, 'warmStart.verboseRate');
  rate(config.warmStart.verboseSlipRate, 'warmStart.verboseSlipRate');
  if (config.warmStart.shortRate + config.warmStart.verboseRate > 1) {
    throw new InvalidArgumentError({
      parameter: 'warmStart.verboseRate',
      functionName: FN,
      value: config.warmStart.verboseRate,
      expected: `at most 1 − warmStart.shortRate (${1 - config.warmStart.shortRate}): a trace is short, verbose or plain`,
    });
  }
  if (config.claims.steps !== undefined) int(config.claims.steps, 'claims.steps', 1);
  num(config.claims.lengthPenaltyFactor, 'claims.lengthPenaltyFactor', 0);
  validateInteger(config.claims.lengthPenaltyOnset, {
    parameter: 'claims.lengthPenaltyOnset',
    functionName: FN,
    min: 0,
    max: config.maxNewTokens - 1,
  });
  rate(config.claims.hackingWarmStart.hedgeRate, 'claims.hackingWarmStart.hedgeRate');
  validateInteger(config.claims.hackingWarmStart.hedgeMaxExtra, {
    parameter: 'claims.hackingWarmStart.hedgeMaxExtra',
    functionName: FN,
    min: 1,
    max: 9,
  });
  int(config.claims.dynamicSamplingGroupSize, 'claims.dynamicSamplingGroupSize', 2);
  int(config.claims.dynamicSamplingSeeds, 'claims.dynamicSamplingSeeds', 1);
  int(config.claims.hackingSeeds, 'claims.hackingSeeds', 1);
  int(config.claims.dynamicSamplingSteps, 'claims.dynamicSamplingSteps', 1);
  const steps = claimSteps(config);
  if (config.claims.enabled && config.grpo.evalEvery === 0) {
    throw new InvalidArgumentError({
      parameter: 'grpo.evalEvery',
      functionName: FN,
      value: 0,
      expected:
        'held-out checks (evalEvery ≥ 1) when the claims phase runs (or --no-claims): its arms are compared with the teacher run’s checks',
    });
  }
  if (
    config.claims.enabled &&
    (steps > config.grpo.maxSteps ||
      (steps % config.grpo.evalEvery !== 0 && steps !== config.grpo.maxSteps))
  ) {
    throw new InvalidArgumentError({
      parameter: 'claims.steps',
      functionName: FN,
      value: steps,
      expected: `grpo.maxSteps (${config.grpo.maxSteps}, the default) or a multiple of grpo.evalEvery (${config.grpo.evalEvery}) below it: the arms are compared with the teacher run's held-out check at that step`,
    });
  }
  int(config.distill.prompts, 'distill.prompts', 1);
  int(config.distill.tracesPerPrompt, 'distill.tracesPerPrompt', 1);
  int(config.distill.maxPerPrompt, 'distill.maxPerPrompt', 1);
  int(config.distill.epochs, 'distill.epochs', 1);
  int(config.distill.batchSize, 'distill.batchSize', 1);
  num(config.distill.learningRate, 'distill.learningRate', 0);
  num(config.distill.temperature, 'distill.temperature', 0);
  validateInteger(config.evaluation.samples, {
    parameter: 'evaluation.samples',
    functionName: FN,
    min: 16,
  });
  num(config.evaluation.temperature, 'evaluation.temperature', 0);
  int(config.workers, 'workers', 0);
  int(config.threads, 'threads', 1);
  if (config.data.eval < config.grpo.evalPrompts) {
    throw new InvalidArgumentError({
      parameter: 'grpo.evalPrompts',
      functionName: FN,
      value: config.grpo.evalPrompts,
      expected: `at most data.eval (${config.data.eval})`,
    });
  }
  const vocabSize = createTokenizer(buildTaskTokenizer()).vocabSize;
  const teacherParameters = parametersOf(config.teacher, vocabSize);
  const studentParameters = parametersOf(config.student, vocabSize);
  if (studentParameters * 4 > teacherParameters) {
    throw new InvalidArgumentError({
      parameter: 'student',
      functionName: FN,
      value: config.student,
      expected: `a size with at most 1/4 of the teacher's ${teacherParameters} parameters (got ${studentParameters})`,
    });
  }
  for (const [parameter, value] of [
    ['warmStart.examples', config.warmStart.examples],
    ['distill.prompts', config.distill.prompts],
  ] as const) {
    if (value > config.data.train) {
      throw new InvalidArgumentError({
        parameter,
        functionName: FN,
        value,
        expected: `at most data.train (${config.data.train})`,
      });
    }
  }
  return config;
}
