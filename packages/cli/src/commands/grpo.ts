import { shapeOf } from '@rlvr/options';
import {
  createGrpoTrainer,
  createLlamaModel,
  effectiveGrpoConfig,
  GRPO_CONFIG,
  GRPO_CONFIG_KEYS,
  type GrpoConfig,
} from '@rlvr/trainer';
import {
  BACKEND_KEY,
  DATASET_KEY,
  REPORT_TO_KEY,
  REWARDS_KEY,
  SAMPLER_KEY,
} from '../config/common-keys.js';
import { CONFIG_KEYS_TITLE, configHelp, configKey, configSpec } from '../config/config-keys.js';
import { keysHelp } from '../config/config-schema.js';
import { attributeError, type ResolvedConfig } from '../config/load-config.js';
import { DATASET_KEYS, loadDataset, toPromptRecords } from '../data/load-dataset.js';
import { startProgress } from '../logging/progress.js';
import { openSinks, parseReportTo, sequentialWriter } from '../logging/sinks.js';
import {
  createSampler,
  loadModel,
  SAMPLER_KEYS,
  selectTrainingBackend,
} from '../model/resolve-model.js';
import { resolveRewards } from '../rewards/resolve-rewards.js';
import type { Command, CommandContext } from './command.js';
import { onInterrupt } from './interrupt.js';
import {
  checkRunFolder,
  outputDirOf,
  resolveLoraConfig,
  saveRunModel,
  writeRunConfig,
} from './run-folder.js';

/** `rlvr grpo`'s own keys (besides @rlvr/trainer's `GrpoConfig` keys), each declared once. */
const GRPO_CLI_SCHEMAS = {
  model: configKey(
    'a checkpoint folder or a run folder',
    'The policy to train: a checkpoint folder, or the run folder of rlvr sft / grpo / distill.',
  ),
  dataset: DATASET_KEY,
  rewards: REWARDS_KEY,
  reportTo: REPORT_TO_KEY,
  backend: BACKEND_KEY,
  sampler: SAMPLER_KEY,
  resume: configKey(
    'true, or a checkpoint folder',
    'Continue from the newest checkpoint in outputDir, or from this one (--resume sets true).',
  ),
  acceptConfigChanges: configKey(
    'a boolean',
    "Resume although the checkpoint's settings differ (the differences are logged).",
  ),
};

/** Keys of `rlvr grpo`'s config besides @rlvr/trainer's `GrpoConfig` keys. */
export const GRPO_CLI_KEYS = Object.keys(GRPO_CLI_SCHEMAS);

/**
 * The CLI's own defaults; every `GrpoConfig` default is the trainer's, never set here: the
 * trainer gets only the keys the user set, and `--print-config` and `rlvr-config.yaml` show
 * @rlvr/trainer's `effectiveGrpoConfig` (see {@link effectiveGrpoRunConfig}).
 */
const GRPO_CLI_DEFAULTS = { reportTo: ['jsonl'], backend: 'auto' };

/** @rlvr/trainer's `GrpoConfig` schema of each of its keys. */
const GRPO_SHAPE = shapeOf(GRPO_CONFIG.schema)!;

const spec = configSpec({
  keys: {
    ...Object.fromEntries(GRPO_CONFIG_KEYS.map((key) => [key, GRPO_SHAPE[key]!])),
    ...GRPO_CLI_SCHEMAS,
  },
  nested: { dataset: DATASET_KEYS, sampler: SAMPLER_KEYS },
  defaults: GRPO_CLI_DEFAULTS,
  required: ['model', 'dataset', 'rewards', 'outputDir', 'maxSteps', 'maxNewTokens'],
});

/** `--help` lines of the `GrpoConfig` keys: what each takes and its default, from the schema. */
const GRPO_KEYS_HELP = `GrpoConfig (@rlvr/trainer; --print-config shows the values a run uses):
${keysHelp('', GRPO_CONFIG.schema).join('\n')}`;

/** The `GrpoConfig` keys the user set (defaults are the trainer's). */
function userGrpoConfig(
  values: Record<string, unknown>,
  origins: ReadonlyMap<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of GRPO_CONFIG_KEYS) {
    if (origins.has(key) && values[key] !== undefined) out[key] = values[key];
  }
  return out;
}

/** The `GrpoConfig` handed to the trainer: the keys the user set, without the trainer's bar. */
function trainerConfig(
  values: Record<string, unknown>,
  origins: ReadonlyMap<string, string>,
): GrpoConfig {
  return { ...userGrpoConfig(values, origins), progress: false } as GrpoConfig;
}

/**
 * Stand-ins for the required `GrpoConfig` keys, so that `--print-config` shows the trainer's
 * defaults before they are set; they, and the defaults derived from them (`saveEvery` from
 * `maxSteps`, `normalizer` from `maxNewTokens`), are left out of what is shown.
 */
const PLACEHOLDERS = {
  maxSteps: { value: 1, derived: ['saveEvery'] },
  maxNewTokens: { value: Number.MAX_SAFE_INTEGER, derived: ['normalizer'] },
  outputDir: { value: 'outputDir', derived: [] },
} as const;

/**
 * The config of a GRPO run as it is used: the CLI's keys and @rlvr/trainer's
 * `effectiveGrpoConfig` of the `GrpoConfig` keys the user set (every trainer default filled in,
 * validated as `createGrpoTrainer` validates it). Shown by `--print-config`, written to
 * `rlvr-config.yaml`.
 * @internal exported for its test
 */
export function effectiveGrpoRunConfig(config: ResolvedConfig): Record<string, unknown> {
  const set = userGrpoConfig(config.values, config.origins);
  const stand: Record<string, unknown> = {};
  for (const [key, { value }] of Object.entries(PLACEHOLDERS)) {
    if (set[key] === undefined) stand[key] = value;
  }
  const effective: Record<string, unknown> = {
    ...effectiveGrpoConfig({ ...stand, ...set } as GrpoConfig),
  };
  for (const [key, { derived }] of Object.entries(PLACEHOLDERS)) {
    if (stand[key] === undefined) continue;
    delete effective[key];
    for (const name of derived) if (set[name] === undefined) delete effective[name];
  }
  const cli = Object.fromEntries(
    Object.entries(config.values).filter(([key]) => !GRPO_CONFIG_KEYS.includes(key as never)),
  );
  return { ...cli, ...effective };
}

export const grpoCommand: Command = {
  name: 'grpo',
  summary: 'train a policy with GRPO on verifiable rewards (@rlvr/trainer GrpoTrainer)',
  usage:
    '--config grpo.yaml [--set key=value]... [--report-to jsonl,csv,tensorboard] [--resume | --overwrite]',
  trains: true,
  spec,
  effectiveConfig: effectiveGrpoRunConfig,
  details: `${configHelp(spec, [{ title: CONFIG_KEYS_TITLE, keys: GRPO_CLI_KEYS }])}
and @rlvr/trainer's GrpoConfig keys (below; see its README). Writes outputDir/metrics.jsonl,
completions.jsonl, checkpoints/, model/ (the final policy) and rlvr-config.yaml.

${GRPO_KEYS_HELP}`,
  example: `rlvr grpo --config grpo.yaml --set beta=0.04 --report-to jsonl,tensorboard
# grpo.yaml
model: sft-run
dataset: { path: data/train.jsonl, columns: { prompt: question, answer: solution } }
rewards: [ { name: math, weight: 1 }, { name: r1-format, weight: 0.2 } ]
outputDir: grpo-run
maxSteps: 20
maxNewTokens: 32
groupSize: 8`,
  async run(context) {
    return trainGrpo(context, await prepareGrpo(context));
  },
};

/** Everything a GRPO run needs, read and checked before anything is written. */
async function prepareGrpo(context: CommandContext) {
  const { config } = context;
  const values = config.values;
  const source = (key: string) => config.origins.get(key) ?? config.file;
  const outputDir = outputDirOf(config);
  const resume = values.resume === true || typeof values.resume === 'string';
  const reportTo = parseReportTo(values.reportTo, source('reportTo'));
  checkRunFolder(outputDir, { overwrite: context.overwrite, resume });
  const rewards = await resolveRewards(values.rewards, source('rewards'));
  const { checkpoint, tokenizer } = await loadModel(values.model, 'model', source('model'));
  const dataset = toPromptRecords(
    await loadDataset(values.dataset, {
      need: ['prompt'],
      ...(tokenizer ? { chat: tokenizer } : {}),
      source: source('dataset'),
    }),
  );
  await selectTrainingBackend(values.backend);
  return { outputDir, resume, reportTo, rewards, checkpoint, tokenizer, dataset };
}

/**
 * Runs GrpoTrainer to `maxSteps`: metrics to the sinks through `onStep`, a progress bar, the final
 * policy to `<outputDir>/model`. Ctrl-C stops between phases (nothing half-written); `--resume`
 * continues from the newest checkpoint.
 */
async function trainGrpo(
  context: CommandContext,
  run: Awaited<ReturnType<typeof prepareGrpo>>,
): Promise<number> {
  const { config, io } = context;
  const values = config.values;
  const { outputDir, resume, checkpoint, tokenizer } = run;
  const model = await createLlamaModel(checkpoint);
  const sampler = await createSampler(
    checkpoint,
    values.sampler as Record<string, unknown> | undefined,
  );
  // Sinks create their files on the first record: opening them first writes nothing.
  const sinks = await openSinks({
    reportTo: run.reportTo,
    dir: outputDir,
    skipJsonl: true,
    overwrite: context.overwrite,
    resume,
    quiet: context.quiet,
    print: (line) => io.stderr(`${line}\n`),
  });
  const writer = sequentialWriter(sinks);
  const grpoConfig = trainerConfig(values, config.origins);
  if (grpoConfig.lora) {
    grpoConfig.lora = (await resolveLoraConfig(grpoConfig.lora)) as GrpoConfig['lora'];
  }
  let bar = startProgress('grpo', 0, false);
  const interrupt = onInterrupt();
  let grpo: Awaited<ReturnType<typeof createGrpoTrainer>> | undefined;
  try {
    grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset: run.dataset,
      rewards: run.rewards,
      config: grpoConfig,
      ...(tokenizer ? { tokenizer } : {}),
      ...(resume ? { resume: typeof values.resume === 'string' ? values.resume : true } : {}),
      ...(context.overwrite && !resume ? { overwrite: true } : {}),
      ...(values.acceptConfigChanges === true ? { acceptConfigChanges: true } : {}),
      onLog: (message) => {
        if (!context.quiet) io.stderr(`${message}\n`);
      },
      onStep: (record) => {
        writer.push({ ...record, phase: record.phase ?? 'train' });
        const { metrics } = record;
        bar.update(
          record.step,
          `reward ${(metrics['reward/mean'] ?? 0).toFixed(3)} loss ${(metrics.loss ?? 0).toExponential(2)}`,
        );
      },
    }).catch((error: unknown) => {
      throw attributeError(error, config);
    });
    await writeRunConfig(outputDir, 'grpo', { ...config, values: effectiveGrpoRunConfig(config) });
    bar = startProgress('grpo', grpoConfig.maxSteps, context.progress, grpo.completedSteps);
    const result = await grpo.train({ signal: interrupt.signal });
    bar.stop();
    await writer.done();
    const tensors = model.toCheckpoint().tensors;
    const modelDir = await saveRunModel(
      outputDir,
      { ...checkpoint, tensors },
      model.toLoraAdapter(),
    );
    const reward = result.last?.metrics['reward/mean'] ?? Number.NaN;
    io.stdout(
      `grpo: ${result.steps} steps, reward/mean ${reward.toFixed(4)}; model saved to ${modelDir}\n`,
    );
    return 0;
  } finally {
    interrupt.dispose();
    bar.stop();
    await writer.done().catch(() => undefined); // a failed run: its error is the one reported
    await sinks.close();
    await sampler.close();
    grpo?.dispose();
    model.dispose();
  }
}
