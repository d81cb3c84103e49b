import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidArgumentError, validateInteger, validateNumber, validateOneOf } from '@rlvr/core';
import { type TaskConfig, validateTaskConfig } from './task.js';

/** A Llama-style model size (Hugging Face field meanings). */
export type ModelSize = {
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  intermediateSize: number;
};

/** GRPO settings of one RL phase. */
export type GrpoConfig = {
  /** Optimizer steps (the RL-only student runs on a wall-clock budget instead, capped by this). */
  steps: number;
  /** Groups (prompts) per step after dynamic sampling. */
  promptsPerStep: number;
  /** G: samples per prompt. */
  groupSize: number;
  learningRate: number;
  /** β of the k3 KL penalty to the warm-start (reference) model. */
  klCoefficient: number;
  /** Dynamic sampling: extra sampling rounds per step to replace zero-variance groups. */
  maxResampleRounds: number;
  temperature: number;
  /** Weight of the format reward next to correctness (weight 1). */
  formatWeight: number;
  /**
   * Mask completions that hit `maxNewTokens` out of the loss (DAPO's overlong filtering). Off by
   * default here: every correct trace fits in `maxNewTokens`, so a truncated completion is a
   * degenerate one and should get its negative advantage.
   */
  maskTruncated: boolean;
  /** Loss aggregation of the GRPO objective (@rlvr/trainer's `aggregation`). */
  lossAggregation: 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';
  /** Held-out greedy accuracy every this many steps (0: never). */
  evalEvery: number;
  /** Held-out prompts for that greedy check. */
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
  };
  grpo: GrpoConfig;
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
  maxNewTokens: 48,
  teacher: { hiddenSize: 96, layers: 3, heads: 4, kvHeads: 2, intermediateSize: 256 },
  student: { hiddenSize: 64, layers: 2, heads: 2, kvHeads: 1, intermediateSize: 128 },
  warmStart: { examples: 2000, steps: 600, batchSize: 32, learningRate: 3e-3, slipRate: 0.2 },
  grpo: {
    steps: 30,
    promptsPerStep: 16,
    groupSize: 8,
    learningRate: 3e-4,
    klCoefficient: 0.001,
    maxResampleRounds: 2,
    temperature: 1,
    formatWeight: 0.2,
    maskTruncated: false,
    lossAggregation: 'token-mean',
    evalEvery: 10,
    evalPrompts: 64,
  },
  distill: {
    prompts: 2000,
    tracesPerPrompt: 4,
    maxPerPrompt: 1,
    epochs: 16,
    batchSize: 32,
    learningRate: 6e-3,
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
  warmStart: { examples: 600, steps: 800, batchSize: 32 },
  grpo: { steps: 40, promptsPerStep: 16, evalEvery: 10, evalPrompts: 32 },
  distill: { prompts: 300, tracesPerPrompt: 4, epochs: 3 },
  evaluation: { samples: 16 },
  workers: 1,
};

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

function checkKeys(value: unknown, template: unknown, path: string): void {
  if (!isPlainObject(template)) return;
  if (!isPlainObject(value)) {
    throw new InvalidArgumentError({
      parameter: path || 'config',
      functionName: FN,
      value,
      expected: 'an object',
    });
  }
  for (const [key, child] of Object.entries(value)) {
    if (!(key in template)) {
      throw new InvalidArgumentError({
        parameter: path ? `${path}.${key}` : key,
        functionName: FN,
        value: child,
        expected: `one of the known keys (${Object.keys(template).join(', ')})`,
      });
    }
    checkKeys(child, (template as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
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
  checkKeys(config, DEFAULT_CONFIG, '');
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
  int(config.grpo.steps, 'grpo.steps', 1);
  int(config.grpo.promptsPerStep, 'grpo.promptsPerStep', 1);
  int(config.grpo.groupSize, 'grpo.groupSize', 2);
  num(config.grpo.learningRate, 'grpo.learningRate', 0);
  num(config.grpo.klCoefficient, 'grpo.klCoefficient', 0);
  int(config.grpo.maxResampleRounds, 'grpo.maxResampleRounds', 0);
  num(config.grpo.temperature, 'grpo.temperature', 0);
  num(config.grpo.formatWeight, 'grpo.formatWeight', 0);
  if (typeof config.grpo.maskTruncated !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'grpo.maskTruncated',
      functionName: FN,
      value: config.grpo.maskTruncated,
      expected: 'a boolean',
    });
  }
  validateOneOf(
    config.grpo.lossAggregation,
    ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'],
    { parameter: 'grpo.lossAggregation', functionName: FN },
  );
  int(config.grpo.evalEvery, 'grpo.evalEvery', 0);
  int(config.grpo.evalPrompts, 'grpo.evalPrompts', 1);
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

/** Parses a model size written `HIDDENxLAYERS` (e.g. `128x4`); heads and MLP width follow. */
export function parseSize(text: string, parameter: string): ModelSize {
  const match = /^(\d+)x(\d+)$/.exec(text);
  if (!match) {
    throw new InvalidArgumentError({
      parameter,
      functionName: FN,
      value: text,
      expected: 'HIDDENxLAYERS, e.g. 128x4',
    });
  }
  const hiddenSize = Number(match[1]);
  const layers = Number(match[2]);
  const heads = hiddenSize >= 128 ? 4 : 2;
  return {
    hiddenSize,
    layers,
    heads,
    kvHeads: Math.max(1, heads / 2),
    intermediateSize: Math.round((hiddenSize * 2.75) / 16) * 16,
  };
}

export const USAGE = `Usage: pnpm --filter @rlvr/teacher-student start [options]

RL a teacher with GRPO, distill a student from its verified traces, evaluate all four models with
test-time voting, and write report.json + report.html.

Options:
  --quick                 CI-sized run (a few minutes)
  --config <file.json>    JSON overrides of the run config (deep-merged)
  --seed <n>              seed of everything stochastic (default ${DEFAULT_CONFIG.seed})
  --out <dir>             output folder (default ${DEFAULT_CONFIG.outDir}; --quick: runs/teacher-student-quick)
  --device <cpu|cuda>     cuda: onnxruntime CUDA EP + tfjs-node-gpu (both must be installed)
  --teacher <HxL>         teacher size, e.g. 128x4
  --student <HxL>         student size, e.g. 64x3 (at most 1/4 of the teacher's parameters)
  --warm-start-steps <n>  SFT warm-start steps
  --grpo-steps <n>        teacher GRPO steps
  --distill-epochs <n>    passes of the student over the teacher's verified traces
  --eval-prompts <n>      held-out prompts
  --fresh                 ignore finished phases in the output folder
  --help                  this text
`;

/** CLI flags → a validated config (and whether to resume). */
export function configFromArgs(argv: readonly string[]): {
  config: RunConfig;
  fresh: boolean;
  help: boolean;
} {
  let parsed: ReturnType<typeof parseArgs>;
  const options = {
    quick: { type: 'boolean' },
    config: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
    device: { type: 'string' },
    teacher: { type: 'string' },
    student: { type: 'string' },
    'warm-start-steps': { type: 'string' },
    'grpo-steps': { type: 'string' },
    'distill-epochs': { type: 'string' },
    'eval-prompts': { type: 'string' },
    fresh: { type: 'boolean' },
    help: { type: 'boolean' },
  } as const;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new InvalidArgumentError({
      parameter: 'argv',
      functionName: FN,
      value: argv.join(' '),
      expected: `known flags (${(error as Error).message})`,
      cause: error,
    });
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  let config: RunConfig = structuredClone(DEFAULT_CONFIG);
  if (values.quick) {
    config = mergeConfig(config, QUICK_OVERRIDES);
    config.outDir = 'runs/teacher-student-quick';
  }
  if (typeof values.config === 'string') {
    let fileConfig: unknown;
    try {
      fileConfig = JSON.parse(readFileSync(values.config, 'utf8'));
    } catch (error) {
      throw new InvalidArgumentError({
        parameter: '--config',
        functionName: FN,
        value: values.config,
        expected: 'a readable JSON file',
        cause: error,
      });
    }
    checkKeys(fileConfig, DEFAULT_CONFIG, '');
    config = mergeConfig(config, fileConfig as DeepPartial<RunConfig>);
  }
  const integer = (flag: string) => {
    const text = values[flag] as string;
    const value = Number(text);
    return validateInteger(value, { parameter: `--${flag}`, functionName: FN, min: 0 });
  };
  if (values.seed !== undefined) config.seed = integer('seed');
  if (typeof values.out === 'string') config.outDir = values.out;
  if (values.device !== undefined) {
    config.device = validateOneOf(values.device, ['cpu', 'cuda'] as const, {
      parameter: '--device',
      functionName: FN,
    });
  }
  if (typeof values.teacher === 'string') config.teacher = parseSize(values.teacher, '--teacher');
  if (typeof values.student === 'string') config.student = parseSize(values.student, '--student');
  if (values['warm-start-steps'] !== undefined) {
    config.warmStart.steps = integer('warm-start-steps');
  }
  if (values['grpo-steps'] !== undefined) config.grpo.steps = integer('grpo-steps');
  if (values['distill-epochs'] !== undefined) config.distill.epochs = integer('distill-epochs');
  if (values['eval-prompts'] !== undefined) {
    config.data.eval = integer('eval-prompts');
    config.grpo.evalPrompts = Math.min(config.grpo.evalPrompts, config.data.eval);
  }
  return {
    config: validateConfig(config),
    fresh: values.fresh === true,
    help: values.help === true,
  };
}
