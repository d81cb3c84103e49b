import { join } from 'node:path';
import {
  ErrorCode,
  InvalidArgumentError,
  type RewardFunction,
  RlvrError,
  type WeightedReward,
} from '@rlvr/core';
import {
  DISTILL_LOSS_DEFAULTS,
  DISTILL_LOSS_SCHEMA,
  DISTILL_STUDENT_DEFAULTS,
  type DistillLoss,
  FILTER_TRACES_DEFAULTS,
  FILTER_TRACES_OPTION_KEYS,
  FILTER_TRACES_OPTIONS,
  type FilterTracesOptions,
  filterTraces,
  GENERATE_TRACES_DEFAULTS,
  GENERATE_TRACES_OPTION_KEYS,
  GENERATE_TRACES_OPTIONS,
  generateTraces,
  readTraces,
  type TraceRecord,
  teacherFromModel,
  tokenizeTraces,
} from '@rlvr/distill';
import { defaultsOf, integer, schemaAt, withDefault, zod } from '@rlvr/options';
import { createLlamaModel } from '@rlvr/trainer';
import {
  BACKEND_KEY,
  DATASET_KEY,
  REPORT_TO_KEY,
  RESUME_KEY,
  RUN_FOLDER_KEY,
  SAMPLER_KEY,
  SAVE_EVERY_KEY,
} from '../config/common-keys.js';
import { CONFIG_KEYS_TITLE, configHelp, configKey, configSpec } from '../config/config-keys.js';
import { keysHelp } from '../config/config-schema.js';
import type { ResolvedConfig } from '../config/load-config.js';
import { omitKeys } from '../config/option-keys.js';
import { DATASET_KEYS, loadDataset, toPromptRecords } from '../data/load-dataset.js';
import { ConfigError } from '../errors/config-error.js';
import { loadModel, SAMPLER_KEYS, selectTrainingBackend } from '../model/resolve-model.js';
import {
  BASE_URL_FLAG,
  type ModelSource,
  modelName,
  resolveModelSource,
  SERVED_MODEL_KEYS,
  SERVED_MODEL_SCHEMA,
  samplerOf,
} from '../model/served-model.js';
import { REWARDS_SCHEMA, resolveRewards } from '../rewards/resolve-rewards.js';
import type { Command, CommandContext } from './command.js';
import { checkRunFolder, outputDirOf } from './run-folder.js';
import {
  loopSettings,
  STUDENT_DEFAULTS,
  STUDENT_KEYS_HELP,
  STUDENT_LOOP_DEFAULTS,
  STUDENT_SCHEMAS,
  trainStudent,
} from './train-student.js';

/**
 * `generateTraces` options the CLI supplies itself: the teacher's sampler (`teacher`, `sampler`),
 * the dataset's prompts, the rewards, the run folder's traces file, `--overwrite`, the progress
 * bar and Ctrl-C; `resume` stays the package's (a file of the same teacher and settings is
 * continued).
 */
export const TRACES_KEYS_SET_BY_CLI = [
  'sampler',
  'prompts',
  'reward',
  'outPath',
  'teacher',
  'resume',
  'overwrite',
  'progress',
  'signal',
] as const;
/** Keys of `traces`: @rlvr/distill `generateTraces` options, passed through. */
export const TRACES_KEYS = omitKeys(GENERATE_TRACES_OPTION_KEYS, TRACES_KEYS_SET_BY_CLI);
/** Keys of `filter`: every @rlvr/distill `filterTraces` option, passed through. */
export const FILTER_KEYS = FILTER_TRACES_OPTION_KEYS;
/**
 * The CLI's own default for `traces.k` (traces per prompt): `generateTraces` requires `k` (it has
 * no default). This is its only definition; `--help` and the README show it.
 */
export const CLI_TRACES_DEFAULTS = Object.freeze({ k: 4 } as const);
/**
 * What `traces` takes: generateTraces' options schema less the keys the CLI sets, with the CLI's
 * `k` default. Its defaults are what `--print-config` shows; its JSON Schema is the config's.
 */
export const TRACES_SCHEMA = zod.extend(
  zod.omit(
    GENERATE_TRACES_OPTIONS.schema,
    Object.fromEntries(TRACES_KEYS_SET_BY_CLI.map((key) => [key, true] as const)) as Record<
      (typeof TRACES_KEYS_SET_BY_CLI)[number],
      true
    >,
  ),
  {
    k: withDefault(
      integer({ min: 1 }),
      CLI_TRACES_DEFAULTS.k,
      "Traces per prompt (the CLI's default: generateTraces requires it).",
    ),
  },
);
/** The `loss` key: distillStudent's `loss` schema less `teacher` (the CLI sets it for logits). */
const LOSS_SCHEMA = zod.omit(DISTILL_LOSS_SCHEMA, { teacher: true });
// No seed: filterTraces uses it with prefer: 'random' only (elsewhere it is INEFFECTIVE_OPTION).
const { seed: _seed, ...FILTER_CONFIG_DEFAULTS } = FILTER_TRACES_DEFAULTS;
/** The traces file in the run folder. */
export const TRACES_FILE = 'traces.jsonl';

/** `rlvr distill`'s own keys (besides the student and trainer keys), each declared once. */
const DISTILL_KEYS = {
  teacher: configKey(
    'a model folder, or a served model',
    "The teacher: a model folder sharing the student's tokenizer, or a served model { baseURL, model, api, … } (or --base-url URL with teacher = its name: SFT on its text only).",
    SERVED_MODEL_SCHEMA,
  ),
  student: configKey(
    'a checkpoint folder or a run folder',
    'The model to train (with its tokenizer.json).',
  ),
  dataset: DATASET_KEY,
  rewards: configKey(
    'reward names, or entries',
    'The verifier, as in grpo: a trace is accepted when its weighted reward is at least traces.acceptThreshold.',
    REWARDS_SCHEMA,
  ),
  outputDir: RUN_FOLDER_KEY,
  reportTo: REPORT_TO_KEY,
  backend: BACKEND_KEY,
  sampler: SAMPLER_KEY,
  resume: RESUME_KEY,
  saveEvery: SAVE_EVERY_KEY,
  traces: configKey(
    'an options object',
    `@rlvr/distill generateTraces options (below); the traces go to outputDir/${TRACES_FILE}.`,
    TRACES_SCHEMA,
  ),
  filter: configKey(
    'an options object',
    '@rlvr/distill filterTraces options (below).',
    FILTER_TRACES_OPTIONS.schema,
  ),
  loss: configKey(
    '{ type: sft } or { type: logits, divergence, … }',
    "distillStudent's loss (below): SFT on the traces, or a divergence to the teacher's logits.",
    LOSS_SCHEMA,
  ),
};

const spec = configSpec({
  keys: { ...DISTILL_KEYS, ...STUDENT_SCHEMAS },
  nested: {
    dataset: DATASET_KEYS,
    sampler: SAMPLER_KEYS,
    teacher: SERVED_MODEL_KEYS,
    traces: TRACES_KEYS,
    filter: FILTER_KEYS,
  },
  // traces.k is the CLI's (generateTraces requires it); every other value is the package's
  // own default, read from its schema, so --print-config shows what applies.
  defaults: {
    traces: defaultsOf(TRACES_SCHEMA),
    filter: FILTER_CONFIG_DEFAULTS,
    loss: DISTILL_STUDENT_DEFAULTS.loss,
    ...STUDENT_DEFAULTS,
    reportTo: ['jsonl'],
    backend: 'auto',
  },
  required: ['teacher', 'student', 'dataset', 'rewards', 'outputDir'],
});

/**
 * The distill config as the run uses it (`--print-config`): a `{ type: logits }` loss shows
 * @rlvr/distill's `DISTILL_LOSS_DEFAULTS` for the fields not given (`beta` with `jsd` only, the
 * one divergence it interpolates); every other value is already filled by the spec's defaults.
 */
export function effectiveDistillConfig(config: ResolvedConfig): Record<string, unknown> {
  const values = config.values;
  const loss = values.loss as Record<string, unknown> | undefined;
  if (loss?.type !== 'logits') return values;
  const { beta, temperature, sftWeight } = DISTILL_LOSS_DEFAULTS;
  return {
    ...values,
    loss: { ...(loss.divergence === 'jsd' ? { beta } : {}), temperature, sftWeight, ...loss },
  };
}

/** The weighted sum of the rewards (null only when every reward is null), as one verifier. */
function combined(rewards: readonly WeightedReward[]): RewardFunction {
  return async (input) => {
    let total = 0;
    let any = false;
    for (const reward of rewards) {
      const value = await reward.fn(input);
      if (value === null) continue;
      any = true;
      total += (reward.weight ?? 1) * value;
    }
    return any ? total : null;
  };
}

export const distillCommand: Command = {
  name: 'distill',
  summary:
    'distil a teacher into a student: verified teacher traces, filtered, then SFT (@rlvr/distill)',
  usage: '--config distill.yaml [--set key=value]... [--report-to …] [--resume | --overwrite]',
  trains: true,
  spec,
  flags: BASE_URL_FLAG,
  effectiveConfig: effectiveDistillConfig,
  details: `${configHelp(spec, [{ title: CONFIG_KEYS_TITLE, keys: Object.keys(DISTILL_KEYS) }])}
and the student and trainer keys below (lora for a LoRA student: the run then also writes
adapter/ in PEFT's files). A served teacher's traces are SFT on text, re-tokenized by the student's
tokenizer (a logits loss is refused). The traces file is resumed when the teacher and settings are
the same; another teacher's file is refused without --overwrite.
Defaults: traces.k ${CLI_TRACES_DEFAULTS.k}, epochs ${STUDENT_LOOP_DEFAULTS.epochs}, batchSize ${STUDENT_LOOP_DEFAULTS.batchSize} are the CLI's (the packages require them);
every other default is the package's (filter: every accepted trace, no maxPerPrompt cap;
traces.sampling.temperature ${GENERATE_TRACES_DEFAULTS.sampling.temperature}; a logits loss: beta ${DISTILL_LOSS_DEFAULTS.beta} (jsd only), temperature ${DISTILL_LOSS_DEFAULTS.temperature},
sftWeight ${DISTILL_LOSS_DEFAULTS.sftWeight}); --print-config shows them.

traces (@rlvr/distill generateTraces, less the keys the CLI sets):
${keysHelp('traces.', TRACES_SCHEMA).join('\n')}
${keysHelp('traces.sampling.', schemaAt(TRACES_SCHEMA, ['sampling'])!).join('\n')}
filter (@rlvr/distill filterTraces):
${keysHelp('filter.', FILTER_TRACES_OPTIONS.schema).join('\n')}
loss (@rlvr/distill distillStudent):
${keysHelp('loss.', LOSS_SCHEMA).join('\n')}
${STUDENT_KEYS_HELP}`,
  example: `rlvr distill --config distill.yaml --set traces.k=8
# distill.yaml
teacher: runs/grpo
student: small-model
dataset: { path: data/train.jsonl, columns: { prompt: question, answer: solution } }
rewards: [math]
outputDir: runs/distill
traces: { k: 4, sampling: { maxNewTokens: 32, temperature: 0.8 } }
epochs: 2
schedule: { learningRate: 3e-3 }`,
  async run(context) {
    const { config, io } = context;
    const values = config.values;
    const source = (key: string) => config.origins.get(key) ?? config.file;
    const outputDir = outputDirOf(config);
    const resume = values.resume === true;
    checkRunFolder(outputDir, { overwrite: context.overwrite, resume });
    const loss = values.loss as DistillLoss;
    if (loss?.type !== 'sft' && loss?.type !== 'logits') {
      throw new ConfigError({
        key: 'loss.type',
        source: source('loss'),
        message: `expected sft (cross-entropy on the traces) or logits (a divergence to the teacher's distributions, e.g. { type: logits, divergence: forward-kl }), got ${JSON.stringify((loss as { type?: unknown } | undefined)?.type)}`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    // Checked before the (long) trace generation: the filter and the student loop settings.
    try {
      filterTraces([], values.filter as FilterTracesOptions);
    } catch (error) {
      const parameter = InvalidArgumentError.isInstance(error) ? error.parameter : 'options';
      throw new ConfigError({
        key: parameter.replace(/^options/, 'filter'),
        source: source('filter'),
        message: (error as Error).message,
        code: RlvrError.isInstance(error) ? error.code : ErrorCode.INVALID_ARGUMENT,
        cause: error,
      });
    }
    loopSettings(values, 1);
    const rewards = await resolveRewards(values.rewards, source('rewards'));
    const teacher = await resolveModelSource(
      values.teacher,
      'teacher',
      source('teacher'),
      context.flags['base-url'] as string | undefined,
    );
    if (teacher.kind === 'served' && loss.type === 'logits') {
      throw new ConfigError({
        key: 'loss.type',
        source: source('loss'),
        message:
          "logit distillation needs the teacher's token distribution over the student's tokenizer at every position, which a served teacher does not give: use loss: { type: sft } (SFT on the served teacher's text) or a local teacher folder",
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const student = await loadModel(values.student, 'student', source('student'));
    const tokenizer = student.tokenizer;
    if (tokenizer === undefined) {
      throw new ConfigError({
        key: 'student',
        source: source('student'),
        message: 'the student has no tokenizer.json',
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const prompts = toPromptRecords(
      await loadDataset(values.dataset, {
        need: ['prompt'],
        chat: tokenizer,
        source: source('dataset'),
      }),
    );
    const generated = await keptTraces(context, {
      teacher,
      prompts,
      rewards,
      outputDir,
    });
    // a served teacher's token ids are not the student's: SFT on its text
    const kept =
      teacher.kind === 'served'
        ? tokenizeTraces(generated, {
            encode: (text) => tokenizer.encode(text, { addSpecialTokens: false }),
            ...(tokenizer.eosTokenId === undefined ? {} : { eosTokenId: tokenizer.eosTokenId }),
          })
        : generated;
    await selectTrainingBackend(values.backend);
    // Logit distillation scores the student against the teacher's full distributions.
    const teacherModel =
      loss.type === 'logits' && teacher.kind === 'local'
        ? await createLlamaModel(teacher.checkpoint)
        : undefined;
    let result: Awaited<ReturnType<typeof trainStudent>>;
    try {
      result = await trainStudent({
        context,
        phase: 'distill',
        student: student.checkpoint,
        traces: kept,
        encodePrompt: (prompt) => tokenizer.encode(prompt),
        loss:
          loss.type === 'logits' && teacherModel
            ? { ...loss, teacher: teacherFromModel(teacherModel) }
            : loss,
        outputDir,
        resume,
      });
    } finally {
      teacherModel?.dispose();
    }
    io.stdout(
      `distill: ${kept.length} traces, ${result.steps} steps, final loss ${result.lastLoss.toFixed(4)}; model saved to ${result.modelDir}\n`,
    );
    return 0;
  },
};

/**
 * The teacher's traces (`generateTraces` into `<outputDir>/traces.jsonl`, resumed when the
 * teacher and settings match), read back for the prompts and filtered (`filterTraces`).
 */
async function keptTraces(
  context: CommandContext,
  options: {
    teacher: ModelSource;
    prompts: ReturnType<typeof toPromptRecords>;
    rewards: readonly WeightedReward[];
    outputDir: string;
  },
): Promise<TraceRecord[]> {
  const { config, io } = context;
  const values = config.values;
  const outPath = join(options.outputDir, TRACES_FILE);
  const sampler = await samplerOf(
    options.teacher,
    values.sampler as Record<string, unknown> | undefined,
    'teacher',
    config.origins.get('sampler') ?? config.file,
  );
  let generated: Awaited<ReturnType<typeof generateTraces>>;
  try {
    generated = await generateTraces({
      sampler,
      prompts: options.prompts.map(({ id, prompt, answer, ...metadata }) => ({
        id,
        prompt,
        ...(answer === undefined ? {} : { answer }),
        metadata,
      })),
      ...((values.traces ?? {}) as { k: number; sampling: { maxNewTokens: number } }),
      reward: combined(options.rewards),
      outPath,
      // a served teacher is known by its URL and name (its weights are not here)
      teacher:
        options.teacher.kind === 'local'
          ? { weights: options.teacher.checkpoint }
          : { weightsHash: `served:${modelName(options.teacher)}` },
      ...(context.overwrite ? { overwrite: true } : {}),
      progress: context.progress,
    });
  } finally {
    await sampler.close();
  }
  const traces = await readTraces(outPath, {
    fingerprint: generated.fingerprint,
    promptIds: options.prompts.map((prompt) => prompt.id),
  });
  const { kept, report } = filterTraces(traces, values.filter as FilterTracesOptions);
  io.stderr(
    `distill: ${generated.traces} traces (${generated.resumedPrompts} prompts reused), ${report.accepted} accepted, ${kept.length} kept\n`,
  );
  if (kept.length === 0) {
    throw new ConfigError({
      key: 'traces',
      source: config.origins.get('traces') ?? config.file,
      message:
        'no teacher trace was accepted by the rewards: nothing to distil (check the teacher, rewards and traces.acceptThreshold)',
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  return kept;
}
