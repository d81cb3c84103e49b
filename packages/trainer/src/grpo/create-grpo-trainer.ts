import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import {
  assertSampler,
  createRng,
  fingerprint,
  InvalidArgumentError,
  rejectIneffective,
  type Sampler,
  ShapeMismatchError,
  validateOptions,
  type WeightedReward,
} from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { validatedTensors } from '../model/checkpoint-tensors.js';
import type { LlamaModel } from '../model/llama-model.js';
import { createPolicyTrainer } from '../train/policy-trainer.js';
import { resolveEnvironment } from './environment-options.js';
import { rewardColumns, rewardWeights, validateAdvantageSettings } from './grpo-advantages.js';
import type { GrpoConfig, ResolvedGrpoConfig } from './grpo-config.js';
import { GrpoTrainer } from './grpo-trainer.js';
import {
  GRPO_TRAINER_OPTION_ALIASES,
  GRPO_TRAINER_OPTIONS,
  type GrpoTrainerOptions,
} from './grpo-trainer-options.js';
import { policyOptions, validatePolicyOptions } from './policy-options.js';
import { loadPromptDataset, validatePromptRecords } from './prompt-dataset.js';
import { resolveGrpoConfig } from './resolve-config.js';
import {
  loadRunCheckpoint,
  RUN_STATE_FORMAT,
  type RunCheckpoint,
  type RunState,
} from './run-checkpoint.js';
import type { RunContext } from './run-context.js';
import { checkLogs, clearPreviousRun, cutLogs, planRun, type RunPlan } from './run-files.js';
import { compareSettings, runSettings } from './run-settings.js';

export type { GrpoTrainerOptions } from './grpo-trainer-options.js';

const FN = 'createGrpoTrainer';

function checkModel(model: unknown): LlamaModel {
  if (
    model === null ||
    typeof model !== 'object' ||
    !((model as Partial<LlamaModel>).params instanceof Map)
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.model',
      functionName: FN,
      value: model,
      expected: 'a LlamaModel from createLlamaModel()',
    });
  }
  (model as LlamaModel).assertLive(FN);
  return model as LlamaModel;
}

function checkSampler(sampler: unknown, config: ResolvedGrpoConfig): Sampler {
  assertSampler(sampler, 'options.sampler');
  if (config.syncWeights && typeof sampler.updateWeights !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.sampler',
      functionName: FN,
      value: sampler,
      expected:
        'a Sampler with updateWeights() (the trained weights must reach it, or every step samples the initial policy), or config.syncWeights: false to sample from fixed weights on purpose',
    });
  }
  return sampler;
}

function checkRewards(rewards: unknown): readonly WeightedReward[] {
  if (!Array.isArray(rewards) || rewards.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.rewards',
      functionName: FN,
      value: rewards,
      expected: 'a non-empty array of { name, fn, weight? }',
    });
  }
  const names = new Set<string>();
  rewards.forEach((reward: Partial<WeightedReward> | null, index) => {
    const parameter = `options.rewards[${index}]`;
    validateOptions(reward, { parameter, functionName: FN, known: ['name', 'fn', 'weight'] });
    if (
      reward === null ||
      typeof reward !== 'object' ||
      typeof reward.name !== 'string' ||
      reward.name === '' ||
      reward.name === 'overlong' ||
      names.has(reward.name) ||
      typeof reward.fn !== 'function' ||
      (reward.weight !== undefined && !Number.isFinite(reward.weight))
    ) {
      throw new InvalidArgumentError({
        parameter,
        functionName: FN,
        value: reward,
        expected: "{ name (unique, not 'overlong'), fn: function, weight?: finite number }",
      });
    }
    names.add(reward.name);
  });
  return rewards as readonly WeightedReward[];
}

function checkRunFlags(options: Partial<GrpoTrainerOptions>, config: ResolvedGrpoConfig): void {
  const { resume, overwrite, acceptConfigChanges } = options;
  if (resume !== undefined && typeof resume !== 'boolean' && typeof resume !== 'string') {
    throw new InvalidArgumentError({
      parameter: 'options.resume',
      functionName: FN,
      value: resume,
      expected: 'a boolean or a checkpoint path',
    });
  }
  for (const [name, value] of [
    ['overwrite', overwrite],
    ['acceptConfigChanges', acceptConfigChanges],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean') {
      throw new InvalidArgumentError({
        parameter: `options.${name}`,
        functionName: FN,
        value,
        expected: 'a boolean',
      });
    }
  }
  if (overwrite === true && config.outputDir === undefined) {
    rejectIneffective({
      parameter: 'options.overwrite',
      functionName: FN,
      value: true,
      because: 'config.outputDir is not set (no files are written)',
    });
  }
  if (acceptConfigChanges === true && (resume === undefined || resume === false)) {
    rejectIneffective({
      parameter: 'options.acceptConfigChanges',
      functionName: FN,
      value: true,
      because: 'options.resume is not set (nothing is resumed)',
    });
  }
  for (const name of ['tokenizer', 'onLog', 'onStep'] as const) {
    const value = options[name];
    const ok =
      value === undefined ||
      (name === 'tokenizer'
        ? value !== null && typeof (value as { encode?: unknown }).encode === 'function'
        : typeof value === 'function');
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `options.${name}`,
        functionName: FN,
        value,
        expected: name === 'tokenizer' ? 'an object with encode(text) => number[]' : 'a function',
      });
    }
  }
}

/** The checkpoint's weights checked against `model`'s config (names, shapes), not yet loaded. */
function restoredWeights(model: LlamaModel, checkpoint: Checkpoint): Map<string, Float32Array> {
  return validatedTensors(model.config, checkpoint, { functionName: FN, checkFinite: false });
}

type Prepared = {
  plan: RunPlan;
  loaded: RunCheckpoint | undefined;
  restored: Map<string, Float32Array> | undefined;
};

/** Reads (never writes) what resuming needs and refuses anything inconsistent. */
async function prepareRun(
  options: Partial<GrpoTrainerOptions>,
  config: ResolvedGrpoConfig,
  model: LlamaModel,
  settings: Record<string, unknown>,
  log: (message: string) => void,
): Promise<Prepared> {
  const plan = await planRun({
    outputDir: config.outputDir,
    resume: options.resume,
    overwrite: options.overwrite === true,
    functionName: FN,
  });
  if (plan.kind === 'fresh') return { plan, loaded: undefined, restored: undefined };
  const loaded = await loadRunCheckpoint(plan.checkpoint);
  const differences = compareSettings({
    saved: loaded.state.settings,
    current: settings,
    checkpoint: plan.checkpoint,
    accept: options.acceptConfigChanges === true,
    functionName: FN,
  });
  for (const { field, saved, current } of differences) {
    log(
      `resuming with a changed setting '${field}': ${JSON.stringify(saved)} → ${JSON.stringify(current)}`,
    );
  }
  if (plan.inPlace && config.outputDir !== undefined) {
    await checkLogs(config.outputDir, loaded.state.files, FN);
  }
  if (config.lora !== undefined && loaded.adapter === undefined) {
    throw new ShapeMismatchError({
      parameter: 'config.lora',
      functionName: FN,
      expected: 'a checkpoint of a LoRA run (an adapter/ folder)',
      actual: `a full fine-tuning checkpoint (${plan.checkpoint})`,
    });
  }
  return {
    plan,
    loaded,
    restored: loaded.model ? restoredWeights(model, loaded.model) : undefined,
  };
}

function freshState(
  config: ResolvedGrpoConfig,
  settings: Record<string, unknown>,
  size: number,
): RunState {
  return {
    format: RUN_STATE_FORMAT,
    runId: randomUUID(),
    step: 0,
    skippedSteps: 0,
    consecutiveSkips: 0,
    rng: createRng(config.seed).derive('sampler').getState(),
    cursor: { epoch: 0, position: 0 },
    files: { metricsBytes: 0, completionsBytes: 0 },
    counters: {},
    initialEntropy: null,
    datasetSize: size,
    fingerprint: fingerprint(settings),
    settings,
  };
}

/**
 * Creates a {@link GrpoTrainer}. Everything is validated before any file is created or written:
 * the options and config (unknown keys, ineffective combinations, the loss settings with
 * `createPolicyTrainer`'s checks, the advantage settings with one `groupAdvantages` dry run), the
 * rewards, the dataset, the sampler (`updateWeights` unless `syncWeights: false`), the output
 * folder (a fresh start never replaces another run's files without `overwrite: true`) and, with
 * `resume`, the checkpoint (its settings fingerprint must match unless `acceptConfigChanges`).
 * Then it restores the checkpoint (weights, optimizer, RNG, data position, step; logs cut back
 * to that step) and pushes its weights to the sampler.
 *
 * @example
 * ```ts
 * const grpo = await createGrpoTrainer({
 *   model, sampler, dataset: 'data/train.jsonl',
 *   rewards: [{ name: 'correct', fn: ({ completion, answer }) => (completion.trim() === answer ? 1 : 0) }],
 *   config: { maxSteps: 200, groupSize: 8, promptsPerStep: 16, maxNewTokens: 64,
 *     epsilonHigh: 0.28, dynamicSampling: true, schedule: { learningRate: 1e-5 },
 *     outputDir: 'runs/demo', saveEvery: 20 },
 *   resume: true,
 * });
 * await grpo.train();
 * ```
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` / `UNKNOWN_OPTION` / `INEFFECTIVE_OPTION`
 * naming the option; {@link OverwriteRefusedError} `WOULD_OVERWRITE`; {@link ResumeMismatchError}
 * `RESUME_MISMATCH`; `MODEL_LOAD_FAILED` for an unreadable checkpoint;
 * {@link ShapeMismatchError} when a checkpoint does not fit the model.
 */
export async function createGrpoTrainer(options: GrpoTrainerOptions): Promise<GrpoTrainer> {
  // the schema's keys; each value is checked below, in this order (a missing one by its check)
  const opts = validateOptions<GrpoTrainerOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: GRPO_TRAINER_OPTIONS.keys,
    aliases: GRPO_TRAINER_OPTION_ALIASES,
  }) as GrpoTrainerOptions;
  const model = checkModel(opts.model);
  const resolvedConfig = resolveGrpoConfig(opts.config as GrpoConfig, FN);
  const sampler = checkSampler(opts.sampler, resolvedConfig);
  const multiTurn = resolveEnvironment(
    opts.environment,
    sampler,
    resolvedConfig,
    opts.environment !== undefined && opts.rewards === undefined
      ? undefined
      : checkRewards(opts.rewards),
  );
  const { config, rewards, environment } = multiTurn;
  checkRunFlags(opts, config);
  validatePolicyOptions(config, FN);
  const weights = rewardWeights(rewards, config);
  validateAdvantageSettings(config, weights, FN);
  const dataset =
    typeof opts.dataset === 'string'
      ? await loadPromptDataset(opts.dataset)
      : validatePromptRecords(opts.dataset, FN, 'options.dataset');
  const log = opts.onLog ?? (config.quiet ? () => {} : (message: string) => console.warn(message));
  // a LoRA run's checkpoints hold the adapter only: the base must be the same model to resume
  const base = config.lora ? model.weightsFingerprint() : undefined;
  const settings = runSettings(config, model.config, rewards, dataset, base);
  const { plan, loaded, restored } = await prepareRun(opts, config, model, settings, log);

  // Everything is valid: build, then write.
  if (restored) model.loadWeights(restored);
  const lora =
    config.lora && loaded?.adapter ? { ...config.lora, adapter: loaded.adapter } : config.lora;
  const policy = await createPolicyTrainer(
    model,
    policyOptions({ ...config, lora }, loaded?.reference),
  );
  let state = freshState(config, settings, dataset.length);
  if (loaded) {
    policy.setState({
      optimizer: loaded.optimizer,
      skippedSteps: loaded.state.skippedSteps,
      consecutiveSkips: loaded.state.consecutiveSkips,
    });
    state = {
      ...loaded.state,
      datasetSize: dataset.length,
      fingerprint: state.fingerprint,
      settings,
      ...(plan.kind === 'resume' && !plan.inPlace
        ? { files: { metricsBytes: 0, completionsBytes: 0 } }
        : {}),
    };
  }
  if (config.outputDir !== undefined) {
    await clearPreviousRun(plan.clear);
    await mkdir(config.outputDir, { recursive: true });
    if (plan.kind === 'resume' && plan.inPlace) await cutLogs(config.outputDir, state.files);
  }
  if (loaded && config.syncWeights) {
    await sampler.updateWeights!(model.toWeightSnapshot(policy.step));
  }
  const run: RunContext = {
    policy,
    model,
    sampler,
    environment,
    dataset,
    rewards,
    config,
    tokenizer: opts.tokenizer,
    log,
    onStep: opts.onStep,
    columns: rewardColumns(rewards, config),
    weights,
    settings,
    fingerprint: state.fingerprint,
    runId: state.runId,
    started: performance.now(),
    rng: createRng(state.rng),
    cursor: { ...state.cursor },
    order: undefined,
    completed: state.step,
    counters: { ...state.counters },
    initialEntropy: state.initialEntropy,
    files: { ...state.files },
    lastCheckpointMs: 0,
  };
  return new GrpoTrainer(run);
}
