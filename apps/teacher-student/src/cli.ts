import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  closestOption,
  ErrorCode,
  InvalidArgumentError,
  RlvrError,
  validateInteger,
  validateOneOf,
} from '@rlvr/core';
import { checkRun } from './check-run.js';
import {
  checkKnownKeys,
  DEFAULT_CONFIG,
  type DeepPartial,
  type ModelSize,
  mergeConfig,
  QUICK_OVERRIDES,
  type RunConfig,
  validateConfig,
} from './config.js';
import type { ProgressMode } from './progress.js';
import { runTeacherStudent } from './run.js';
import { summaryTable } from './summary.js';

const FN = 'teacher-student';

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
  --max-steps <n>         teacher GRPO steps (grpo.maxSteps)
  --distill-epochs <n>    passes of the student over the teacher's verified traces
  --eval-prompts <n>      held-out prompts
  --no-claims             skip the claims phase (reward hacking, dynamic-sampling and
                          length-penalty arms, thinking-budget curve: claims.* in the config),
                          which runs by default; --claims runs it when a --config turned it off
  --fresh                 start over: drop finished phases and traces (only once every flag
                          and the config are valid)
  --help                  this text
`;

/** Flags this app had before it took the trainer's names (for the did-you-mean hint only). */
const FLAG_ALIASES: Record<string, string> = { 'grpo-steps': 'max-steps', steps: 'max-steps' };

/**
 * CLI flags → a validated config (and whether to start over). Pure: reads `--config`'s file and
 * nothing else; the trainer-level checks that need a model are {@link checkRun}'s (run.ts).
 */
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
    'max-steps': { type: 'string' },
    'distill-epochs': { type: 'string' },
    'eval-prompts': { type: 'string' },
    fresh: { type: 'boolean' },
    claims: { type: 'boolean' },
    'no-claims': { type: 'boolean' },
    help: { type: 'boolean' },
  } as const;
  for (const arg of argv) {
    const name = /^--([^=]+)/.exec(arg)?.[1];
    if (name === undefined || name in options) continue;
    const suggestion = closestOption(name, Object.keys(options), FLAG_ALIASES);
    throw new InvalidArgumentError({
      parameter: `--${name}`,
      functionName: FN,
      value: arg,
      expected: `a known flag (${suggestion === undefined ? 'see --help' : `did you mean '--${suggestion}'?`})`,
      code: ErrorCode.UNKNOWN_OPTION,
    });
  }
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new InvalidArgumentError({
      parameter: 'argv',
      functionName: FN,
      value: argv.join(' '),
      expected: `known flags with their values (${(error as Error).message})`,
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
    checkKnownKeys(fileConfig);
    config = mergeConfig(config, fileConfig as DeepPartial<RunConfig>);
  }
  const integer = (flag: string) => {
    const text = values[flag] as string;
    return validateInteger(/^\d+$/.test(text) ? Number(text) : text, {
      parameter: `--${flag}`,
      functionName: FN,
      min: 0,
    });
  };
  if (values.claims && values['no-claims']) {
    throw new InvalidArgumentError({
      parameter: '--no-claims',
      functionName: FN,
      value: '--claims --no-claims',
      expected: 'one of --claims and --no-claims, not both',
    });
  }
  if (values.claims) config.claims.enabled = true;
  if (values['no-claims']) config.claims.enabled = false;
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
  if (values['max-steps'] !== undefined) config.grpo.maxSteps = integer('max-steps');
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

/** Where {@link runCli} writes (default: the console) and how it shows progress. */
export type CliIo = {
  out?: (text: string) => void;
  err?: (text: string) => void;
  progress?: ProgressMode;
};

/**
 * The command line: parse and validate every flag and the whole config (including the trainer's
 * view of the `grpo` section) before anything is written or deleted, then run. Returns the exit
 * code: 0 done, 2 bad flags or config (the usage is printed; nothing on disk changed).
 */
export async function runCli(argv: readonly string[], io: CliIo = {}): Promise<number> {
  const out = io.out ?? ((text: string) => console.log(text));
  const err = io.err ?? ((text: string) => console.error(text));
  let parsed: ReturnType<typeof configFromArgs>;
  try {
    parsed = configFromArgs(argv);
    if (parsed.help) {
      out(USAGE);
      return 0;
    }
    await checkRun(parsed.config);
  } catch (error) {
    if (RlvrError.isInstance(error)) {
      err(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  const { config } = parsed;
  err(
    `rlvr teacher-student${config.quick ? ' (--quick)' : ''}: output in ${resolve(config.outDir)}`,
  );
  const report = await runTeacherStudent({
    config,
    fresh: parsed.fresh,
    log: err,
    ...(io.progress === undefined ? {} : { progress: io.progress }),
  });
  out(`\n${summaryTable(report)}`);
  out(`\nreport: ${resolve(config.outDir, 'report.html')} (+ report.json)`);
  return 0;
}
