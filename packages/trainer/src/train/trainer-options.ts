import { totalmem } from 'node:os';
import {
  InvalidArgumentError,
  type KlEstimator,
  type LossAggregation,
  type LossMode,
  type MismatchMode,
  mismatchCorrection,
  policyLoss,
  type RatioLevel,
  rejectIneffective,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import type { Checkpoint, LoraAdapter } from '@rlvr/model';
import { ADAMW_DEFAULTS, LORA_DEFAULTS, SCHEDULE_DEFAULTS, TRAINER_DEFAULTS } from '../defaults.js';
import { LORA_MODULES, type LoraModule } from '../native/layer-graph.js';
import type { AdamWOptions } from '../optim/adamw.js';
import { type LearningRateSchedule, validateSchedule } from '../optim/schedule.js';
import { POLICY_TRAINER_OPTION_KEYS } from '../policy-trainer-option-keys.js';
import { rejectIneffectiveVariants, resolveLossVariants } from './loss-variant-options.js';

/** The GRPO/PPO loss settings (the fields of @rlvr/core's `policyLoss`, TRL names in brackets). */
export type GrpoLossConfig = {
  /**
   * Sampling temperature T (default 1) [`temperature`]: every GRPO logprob (policy, π_old,
   * reference) and entropy is `log softmax(logits / T)` over the whole vocabulary, so the ratio
   * is on-policy for a sampler drawing at T.
   */
  temperature?: number;
  /** Default `token`; `sequence` is GSPO [`importance_sampling_level`]. */
  ratioLevel?: RatioLevel;
  /**
   * The policy-gradient term (default `clip`; `cispo` is MiniMax-M1's, `sapo` the soft gate)
   * [TRL `loss_type` `cispo` / `sapo`; verl `policy_loss.loss_mode`]; see @rlvr/core's `LossMode`.
   */
  lossMode?: LossMode;
  /** ε_low (default 0.2) [`epsilon`]; `cispo` clips its weight at 1 − ε_low too. Not with `sapo`. */
  epsilonLow?: number;
  /**
   * ε_high (default ε_low; DAPO 0.28) [`epsilon_high`]; `cispo` clips its weight at 1 + ε_high
   * (TRL's `epsilon_high` for cispo is the cap itself: its 5.0 is 4 here). Not with `sapo`.
   */
  epsilonHigh?: number;
  /** Dual-clip constant c > 1. `clip` only. */
  dualClip?: number;
  /** Two-sided clip δ > 1 + ε_high [`delta`]. `clip` only. */
  delta?: number;
  /** SAPO's gate temperature for A > 0 (default 1) [`sapo_temperature_pos`]. `sapo` only. */
  sapoTemperaturePos?: number;
  /** SAPO's gate temperature for A ≤ 0 (default 1.05) [`sapo_temperature_neg`]. `sapo` only. */
  sapoTemperatureNeg?: number;
  /**
   * ρ ∈ [0, 1] (default 1: every token) [`top_entropy_quantile`; "Beyond the 80/20 Rule": 0.2]:
   * the policy term (and the entropy bonus) only on the tokens whose entropy is at least the
   * (1 − ρ)-quantile of the mini-batch's, measured at the start of the `grpoStep` (the policy
   * that π_old is).
   */
  topEntropyQuantile?: number;
  /**
   * δ of DeepSeek-V3.2's off-policy sequence masking [`off_policy_mask_threshold`]: sequences
   * with A < 0 whose mean `behaviourLogprob − logprob` exceeds δ lose their policy term. Against
   * the batch's `behaviourLogprobs` (else π_old). Default: off.
   */
  offPolicyMaskThreshold?: number;
  /** The KL estimate weighted by the importance ratio (DeepSeek-V3.2) [`use_bias_correction_kl`]; needs β > 0. */
  useBiasCorrectionKl?: boolean;
  /** β: KL coefficient to the reference policy (default 0: no reference model is created) [`beta`]. */
  beta?: number;
  /** KL estimator when β > 0 (default `k3`). */
  klEstimator?: KlEstimator;
  /** η: entropy bonus weight (default 0). */
  entropyCoefficient?: number;
  /** Loss aggregation (default `token-mean`, TRL's `dapo`) [`loss_type`]. */
  lossAggregation?: LossAggregation;
  /** Constant normalizer of `seq-mean-token-sum-norm` (e.g. maxNewTokens); only with that mode. */
  normalizer?: number;
  /**
   * Rollout↔trainer mismatch correction (TRL `vllm_importance_sampling_*`); needs
   * `behaviourLogprobs` in the batch. Default: off. `lowerThreshold` only with the mask modes.
   */
  mismatch?: { mode?: MismatchMode; cap?: number; lowerThreshold?: number };
};

/**
 * LoRA adapters (Hugging Face PEFT's `LoraConfig`; its names in brackets, its defaults): the base
 * model is frozen and only the adapters train. Native engine only.
 */
export type LoraOptions = {
  /** Rank r (default 8) [`r`]. */
  r?: number;
  /** α: the adapters' output is scaled by α / r (default 8) [`lora_alpha`]. */
  alpha?: number;
  /** Dropout probability on the adapters' inputs during training steps (default 0) [`lora_dropout`]. */
  dropout?: number;
  /**
   * Projections to adapt: PEFT module names (`q_proj`, `k_proj`, `v_proj`, `o_proj`, `gate_proj`,
   * `up_proj`, `down_proj`) or `'all-linear'` (all of them; not `lm_head`, as PEFT). Default
   * PEFT's for Llama/Qwen2: `['q_proj', 'v_proj']` [`target_modules`].
   */
  targetModules?: readonly string[] | 'all-linear';
  /** rsLoRA: scale α / √r instead of α / r (default false) [`use_rslora`]. */
  rslora?: boolean;
  /** Seed of the adapters' initialization and of the dropout masks (default 0). */
  seed?: number;
  /**
   * Start from these adapter weights (e.g. `loadLoraAdapter(dir)` from @rlvr/model, PEFT's
   * `PeftModel.from_pretrained(..., is_trainable=True)`): its `r`, `alpha`, `targetModules` and
   * `rslora` are used (a different explicit value is an error); `dropout` is this option's.
   */
  adapter?: LoraAdapter;
};

/** Options of {@link createPolicyTrainer}; defaults are {@link TRAINER_DEFAULTS}. */
export type PolicyTrainerOptions = {
  /**
   * Learning rate and its schedule (default {@link SCHEDULE_DEFAULTS}: constant 1e-6, no warm-up)
   * [`learning_rate`].
   */
  schedule?: LearningRateSchedule;
  /** AdamW settings; a field not given is {@link ADAMW_DEFAULTS}' (β 0.9, 0.999, ε 1e-8, λ 0). */
  optimizer?: AdamWOptions;
  /** Clip gradients to this global L2 norm (default 1; 0 disables clipping) [`max_grad_norm`]. */
  maxGradNorm?: number;
  /** Sequences per forward/backward pass; gradients accumulate (default: all at once). */
  microBatchSize?: number;
  /**
   * Token budget of a forward/backward pass (rows × row length, padding included): sequences are
   * split into micro-batches that stay under it (a sequence longer than the budget is a
   * micro-batch of its own); the update does not depend on the split. Default on the native
   * engine: the largest the memory limit allows (see {@link planMemory}); unlimited on tfjs.
   */
  microBatchTokens?: number;
  /**
   * Recompute each layer's activations in the backward instead of keeping them from the forward
   * (activation checkpointing; Hugging Face's `gradient_checkpointing`): less memory, ~1/3 more
   * compute. `'auto'` (default): off when the kept activations fit the memory limit, on where
   * they would not. Native engine only (the tfjs engine keeps every activation).
   */
  gradientCheckpointing?: boolean | 'auto';
  /**
   * The memory the training process may use (default `os.totalmem()`): `createPolicyTrainer`
   * refuses a model whose weights, gradients, optimizer state and reference do not fit with a
   * `MemoryLimitError` naming what would fit, and steps size their micro-batches to it.
   */
  memoryLimitBytes?: number;
  /** LoRA adapters (PEFT's): train them instead of the model's weights (native engine). */
  lora?: LoraOptions;
  /**
   * NaN/Inf loss, gradients or logprobs: skip the update and count it (`skip`, default) or throw
   * a `NonFiniteError` (`error`).
   */
  onNonFinite?: 'error' | 'skip';
  /**
   * With `onNonFinite: 'skip'`: this many skipped updates in a row throw a `TrainingStalledError`
   * (default 3; 0 never stops). An applied update resets the count.
   */
  maxConsecutiveSkips?: number;
  /** GRPO loss settings. */
  grpo?: GrpoLossConfig;
  /**
   * Weights of the frozen reference policy when `grpo.beta` > 0 (default: a copy of the model's
   * current weights). Pass the saved reference when resuming a run.
   */
  referenceCheckpoint?: Checkpoint;
};

/** {@link LoraOptions} with its defaults filled in (targets as module keys). @internal */
export type ResolvedLora = {
  r: number;
  alpha: number;
  dropout: number;
  targetModules: LoraModule[];
  rslora: boolean;
  seed: number;
  adapter?: LoraAdapter;
};

/** {@link GrpoLossConfig} with its defaults filled in. @internal */
export type ResolvedGrpoLoss = Required<
  Pick<
    GrpoLossConfig,
    | 'temperature'
    | 'ratioLevel'
    | 'epsilonLow'
    | 'epsilonHigh'
    | 'beta'
    | 'klEstimator'
    | 'entropyCoefficient'
    | 'lossAggregation'
    | 'lossMode'
    | 'topEntropyQuantile'
    | 'useBiasCorrectionKl'
  >
> &
  Pick<
    GrpoLossConfig,
    | 'dualClip'
    | 'delta'
    | 'normalizer'
    | 'mismatch'
    | 'sapoTemperaturePos'
    | 'sapoTemperatureNeg'
    | 'offPolicyMaskThreshold'
  >;

/** Validated {@link PolicyTrainerOptions}. @internal */
export type ResolvedTrainerOptions = {
  schedule: LearningRateSchedule;
  optimizer: Required<AdamWOptions>;
  maxGradNorm: number;
  microBatchSize: number;
  microBatchTokens: number | undefined;
  gradientCheckpointing: boolean | 'auto';
  memoryLimitBytes: number;
  /** Where the limit comes from, for messages (`memoryLimitBytes` or `os.totalmem()`). */
  memoryLimitName: string;
  lora: ResolvedLora | undefined;
  onNonFinite: 'error' | 'skip';
  maxConsecutiveSkips: number;
  grpo: ResolvedGrpoLoss;
  referenceCheckpoint: Checkpoint | undefined;
};

const GRPO_KEYS = [
  'temperature',
  'ratioLevel',
  'lossMode',
  'epsilonLow',
  'epsilonHigh',
  'dualClip',
  'delta',
  'sapoTemperaturePos',
  'sapoTemperatureNeg',
  'topEntropyQuantile',
  'offPolicyMaskThreshold',
  'useBiasCorrectionKl',
  'beta',
  'klEstimator',
  'entropyCoefficient',
  'lossAggregation',
  'normalizer',
  'mismatch',
] as const;
const OPTIMIZER_KEYS = ['betas', 'epsilon', 'weightDecay'] as const;
const LORA_KEYS = ['r', 'alpha', 'dropout', 'targetModules', 'rslora', 'seed', 'adapter'] as const;
/** PEFT names, for the "did you mean" hint only. */
const LORA_ALIASES = {
  lora_alpha: 'alpha',
  lora_dropout: 'dropout',
  target_modules: 'targetModules',
  use_rslora: 'rslora',
  rank: 'r',
} as const;
const MISMATCH_KEYS = ['mode', 'cap', 'lowerThreshold'] as const;
/** Old names, for the "did you mean" hint only (never accepted). */
const GRPO_ALIASES = {
  klCoefficient: 'beta',
  aggregation: 'lossAggregation',
  loss_type: 'lossAggregation',
  loss_mode: 'lossMode',
  tau_pos: 'sapoTemperaturePos',
  tau_neg: 'sapoTemperatureNeg',
} as const;

/** Validates a temperature T > 0 (finite). @internal */
export function validateTemperature(value: unknown, parameter: string, functionName: string) {
  return validateNumber(value, { parameter, functionName, min: 0, exclusiveMin: true });
}

/** Validates {@link PolicyTrainerOptions} and fills the defaults. @internal */
export function resolveTrainerOptions(
  options: unknown,
  functionName: string,
): ResolvedTrainerOptions {
  const opts = validateOptions<PolicyTrainerOptions>(options, {
    parameter: 'options',
    functionName,
    known: POLICY_TRAINER_OPTION_KEYS,
  });
  const schedule = opts.schedule ?? { learningRate: SCHEDULE_DEFAULTS.learningRate };
  validateSchedule(schedule, functionName, 'options.schedule');
  const maxGradNorm = validateNumber(opts.maxGradNorm ?? TRAINER_DEFAULTS.maxGradNorm, {
    parameter: 'options.maxGradNorm',
    functionName,
    min: 0,
  });
  const microBatchSize = validateInteger(opts.microBatchSize ?? TRAINER_DEFAULTS.microBatchSize, {
    parameter: 'options.microBatchSize',
    functionName,
    min: 1,
  });
  const onNonFinite = validateOneOf(
    opts.onNonFinite ?? TRAINER_DEFAULTS.onNonFinite,
    ['error', 'skip'],
    { parameter: 'options.onNonFinite', functionName },
  );
  if (opts.maxConsecutiveSkips !== undefined && onNonFinite === 'error') {
    rejectIneffective({
      parameter: 'options.maxConsecutiveSkips',
      value: opts.maxConsecutiveSkips,
      because: "onNonFinite is 'error' (the first non-finite update throws; nothing is skipped)",
      functionName,
    });
  }
  const maxConsecutiveSkips = validateInteger(
    opts.maxConsecutiveSkips ?? TRAINER_DEFAULTS.maxConsecutiveSkips,
    { parameter: 'options.maxConsecutiveSkips', functionName, min: 0 },
  );
  const optimizer = resolveOptimizer(opts.optimizer, functionName);
  const grpo = resolveGrpoLoss(opts.grpo, functionName);
  const microBatchTokens =
    opts.microBatchTokens === undefined
      ? undefined
      : validateInteger(opts.microBatchTokens, {
          parameter: 'options.microBatchTokens',
          functionName,
          min: 1,
        });
  const gradientCheckpointing =
    opts.gradientCheckpointing ?? TRAINER_DEFAULTS.gradientCheckpointing;
  if (gradientCheckpointing !== 'auto' && typeof gradientCheckpointing !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.gradientCheckpointing',
      functionName,
      value: gradientCheckpointing,
      expected: "true, false or 'auto'",
    });
  }
  const memoryLimitBytes = validateNumber(opts.memoryLimitBytes ?? totalmem(), {
    parameter: 'options.memoryLimitBytes',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  const lora = opts.lora === undefined ? undefined : resolveLora(opts.lora, functionName);
  if (opts.referenceCheckpoint !== undefined && grpo.beta === 0) {
    rejectIneffective({
      parameter: 'options.referenceCheckpoint',
      value: '(a checkpoint)',
      because: 'grpo.beta is 0 (no KL term, so no reference model is used)',
      functionName,
    });
  }
  return {
    schedule,
    optimizer,
    maxGradNorm,
    microBatchSize,
    microBatchTokens,
    gradientCheckpointing,
    memoryLimitBytes,
    memoryLimitName: opts.memoryLimitBytes === undefined ? 'os.totalmem()' : 'memoryLimitBytes',
    lora,
    onNonFinite,
    maxConsecutiveSkips,
    grpo,
    referenceCheckpoint: opts.referenceCheckpoint,
  };
}

const PEFT_MODULES: Record<string, LoraModule> = Object.fromEntries(
  LORA_MODULES.map((module) => [`${module}_proj`, module]),
);
const PEFT_NAMES = Object.keys(PEFT_MODULES).sort();
const _PEFT_NAMES = Object.keys(PEFT_MODULES).sort();

/** Validates {@link LoraOptions} and fills PEFT's defaults. @internal */
export function resolveLora(value: unknown, functionName: string): ResolvedLora {
  const given = validateOptions<LoraOptions>(value, {
    parameter: 'options.lora',
    functionName,
    known: LORA_KEYS,
    aliases: LORA_ALIASES,
  });
  const raw = fromAdapter(given, functionName);
  const r = validateInteger(raw.r ?? LORA_DEFAULTS.r, {
    parameter: 'options.lora.r',
    functionName,
    min: 1,
  });
  const alpha = validateNumber(raw.alpha ?? LORA_DEFAULTS.alpha, {
    parameter: 'options.lora.alpha',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  const dropout = validateNumber(raw.dropout ?? LORA_DEFAULTS.dropout, {
    parameter: 'options.lora.dropout',
    functionName,
    min: 0,
    max: 1,
    exclusiveMax: true,
  });
  const targets = raw.targetModules ?? LORA_DEFAULTS.targetModules;
  let targetModules: LoraModule[];
  if (targets === 'all-linear') targetModules = [...LORA_MODULES];
  else {
    if (!Array.isArray(targets) || targets.length === 0) {
      throw new InvalidArgumentError({
        parameter: 'options.lora.targetModules',
        functionName,
        value: targets,
        expected: `'all-linear' or a non-empty array of ${Object.keys(PEFT_MODULES).join(', ')}`,
      });
    }
    targetModules = targets.map((name, index) => {
      const module = PEFT_MODULES[name as string];
      if (module === undefined) {
        throw new InvalidArgumentError({
          parameter: `options.lora.targetModules[${index}]`,
          functionName,
          value: name,
          expected: `one of ${Object.keys(PEFT_MODULES).join(', ')} (Llama/Qwen2 projection names)`,
        });
      }
      return module;
    });
    targetModules = LORA_MODULES.filter((module) => targetModules.includes(module));
  }
  if (raw.rslora !== undefined && typeof raw.rslora !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'options.lora.rslora',
      functionName,
      value: raw.rslora,
      expected: 'a boolean',
    });
  }
  const seed = validateInteger(raw.seed ?? 0, {
    parameter: 'options.lora.seed',
    functionName,
    min: 0,
  });
  const rslora = raw.rslora ?? false;
  return {
    r,
    alpha,
    dropout,
    targetModules,
    rslora,
    seed,
    ...(given.adapter ? { adapter: given.adapter } : {}),
  };
}

/** `lora` with an `adapter`'s settings filled in (an explicit one that differs is an error). */
function fromAdapter(lora: LoraOptions, functionName: string): LoraOptions {
  const { adapter } = lora;
  if (adapter === undefined) return lora;
  if (adapter === null || typeof adapter !== 'object' || typeof adapter.config !== 'object') {
    throw new InvalidArgumentError({
      parameter: 'options.lora.adapter',
      functionName,
      value: adapter,
      expected: "a LoraAdapter { config, tensors } (@rlvr/model's loadLoraAdapter)",
    });
  }
  const fromFile: Partial<LoraOptions> = {
    r: adapter.config.r,
    alpha: adapter.config.alpha,
    targetModules: adapter.config.targetModules,
    rslora: adapter.config.rslora,
  };
  for (const key of ['r', 'alpha', 'rslora'] as const) {
    if (lora[key] !== undefined && lora[key] !== fromFile[key]) {
      throw new InvalidArgumentError({
        parameter: `options.lora.${key}`,
        functionName,
        value: lora[key],
        expected: `the adapter's value (${JSON.stringify(fromFile[key])}) or none`,
      });
    }
  }
  const targets = lora.targetModules;
  if (
    targets !== undefined &&
    JSON.stringify(targets === 'all-linear' ? [...PEFT_NAMES] : [...targets].sort()) !==
      JSON.stringify([...adapter.config.targetModules].sort())
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.lora.targetModules',
      functionName,
      value: targets,
      expected: `the adapter's targets (${adapter.config.targetModules.join(', ')}) or none`,
    });
  }
  return { ...fromFile, ...lora, targetModules: adapter.config.targetModules };
}

function resolveOptimizer(value: unknown, functionName: string): Required<AdamWOptions> {
  const optimizer = validateOptions<AdamWOptions>(value, {
    parameter: 'options.optimizer',
    functionName,
    known: OPTIMIZER_KEYS,
  });
  const betas = optimizer.betas ?? ADAMW_DEFAULTS.betas;
  if (!Array.isArray(betas) || betas.length !== 2) {
    throw new InvalidArgumentError({
      parameter: 'options.optimizer.betas',
      functionName,
      value: betas,
      expected: 'a pair [β₁, β₂]',
    });
  }
  betas.forEach((beta, index) => {
    validateNumber(beta, {
      parameter: `options.optimizer.betas[${index}]`,
      functionName,
      min: 0,
      max: 1,
      exclusiveMax: true,
    });
  });
  const epsilon = validateNumber(optimizer.epsilon ?? ADAMW_DEFAULTS.epsilon, {
    parameter: 'options.optimizer.epsilon',
    functionName,
    min: 0,
    exclusiveMin: true,
  });
  const weightDecay = validateNumber(optimizer.weightDecay ?? ADAMW_DEFAULTS.weightDecay, {
    parameter: 'options.optimizer.weightDecay',
    functionName,
    min: 0,
  });
  return { betas: [betas[0], betas[1]], epsilon, weightDecay };
}

function resolveGrpoLoss(value: unknown, functionName: string): ResolvedGrpoLoss {
  const raw = validateOptions<GrpoLossConfig>(value, {
    parameter: 'options.grpo',
    functionName,
    known: GRPO_KEYS,
    aliases: GRPO_ALIASES,
  });
  const epsilonLow = raw.epsilonLow ?? TRAINER_DEFAULTS.epsilonLow;
  const grpo: ResolvedGrpoLoss = {
    ...raw,
    ...resolveLossVariants(raw, 'options.grpo.', functionName),
    temperature: validateTemperature(
      raw.temperature ?? TRAINER_DEFAULTS.temperature,
      'options.grpo.temperature',
      functionName,
    ),
    ratioLevel: raw.ratioLevel ?? TRAINER_DEFAULTS.ratioLevel,
    epsilonLow,
    epsilonHigh: raw.epsilonHigh ?? epsilonLow,
    beta: raw.beta ?? TRAINER_DEFAULTS.beta,
    klEstimator: raw.klEstimator ?? TRAINER_DEFAULTS.klEstimator,
    entropyCoefficient: raw.entropyCoefficient ?? TRAINER_DEFAULTS.entropyCoefficient,
    lossAggregation: raw.lossAggregation ?? TRAINER_DEFAULTS.lossAggregation,
  };
  if (raw.mismatch !== undefined) {
    validateOptions(raw.mismatch, {
      parameter: 'options.grpo.mismatch',
      functionName,
      known: MISMATCH_KEYS,
    });
  }
  rejectIneffectiveVariants(raw, grpo.beta, 'options.grpo.', functionName);
  checkWithCore(grpo, functionName);
  rejectIneffectiveLoss(raw, grpo, functionName);
  return grpo;
}

/** Lets core validate the loss settings once, on a one-token batch. */
function checkWithCore(grpo: ResolvedGrpoLoss, functionName: string): void {
  try {
    policyLoss({
      logprobs: [[-1]],
      oldLogprobs: [[-1]],
      advantages: [0],
      ratioLevel: grpo.ratioLevel,
      ...corePolicySettings(grpo),
      klCoefficient: grpo.beta,
      klEstimator: grpo.klEstimator,
      refLogprobs: [[-1]],
      entropies: [[0]],
      entropyCoefficient: grpo.entropyCoefficient,
      aggregation: grpo.lossAggregation,
      aggregationOptions:
        grpo.normalizer === undefined ? undefined : { normalizer: grpo.normalizer },
    });
    if (grpo.mismatch !== undefined) {
      mismatchCorrection({ trainerLogprobs: [[-1]], behaviourLogprobs: [[-1]], ...grpo.mismatch });
    }
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      const field = error.parameter
        .replace(/^options\./, '')
        .replace(/^klCoefficient$/, 'beta')
        .replace(/^aggregation$/, 'lossAggregation');
      const isMismatch = ['mode', 'cap', 'lowerThreshold'].includes(field);
      throw new InvalidArgumentError({
        parameter: `options.grpo.${isMismatch ? 'mismatch.' : ''}${field}`,
        functionName,
        value: error.value,
        expected: error.message.replace(/^.*expected /, '').replace(/, got .*$/, ''),
        code: error.code,
        cause: error,
      });
    }
    throw error;
  }
}

/**
 * The `policyLoss` settings of the policy term for `grpo`'s `lossMode` (what it reads: ε only for
 * `clip` / `cispo`, the SAPO temperatures only for `sapo`), the off-policy mask's δ and the KL
 * correction. @internal
 */
export function corePolicySettings(grpo: ResolvedGrpoLoss) {
  const given = <K extends keyof ResolvedGrpoLoss>(keys: readonly K[]) =>
    Object.fromEntries(
      keys.filter((key) => grpo[key] !== undefined).map((key) => [key, grpo[key]]),
    );
  return {
    lossMode: grpo.lossMode,
    ...(grpo.lossMode === 'sapo'
      ? given(['sapoTemperaturePos', 'sapoTemperatureNeg'])
      : { epsilonLow: grpo.epsilonLow, epsilonHigh: grpo.epsilonHigh }),
    ...given(['dualClip', 'delta', 'offPolicyMaskThreshold']),
    useBiasCorrectionKl: grpo.useBiasCorrectionKl,
  } as Pick<
    Parameters<typeof policyLoss>[0],
    | 'lossMode'
    | 'epsilonLow'
    | 'epsilonHigh'
    | 'dualClip'
    | 'delta'
    | 'sapoTemperaturePos'
    | 'sapoTemperatureNeg'
    | 'offPolicyMaskThreshold'
    | 'useBiasCorrectionKl'
  >;
}

/** Options that do nothing in the chosen combination are errors (`INEFFECTIVE_OPTION`). */
function rejectIneffectiveLoss(
  raw: Partial<GrpoLossConfig>,
  grpo: ResolvedGrpoLoss,
  functionName: string,
): void {
  if (raw.normalizer !== undefined && grpo.lossAggregation !== 'seq-mean-token-sum-norm') {
    rejectIneffective({
      parameter: 'options.grpo.normalizer',
      value: raw.normalizer,
      because: `it is used only by lossAggregation 'seq-mean-token-sum-norm' (this one is '${grpo.lossAggregation}')`,
      functionName,
    });
  }
  if (raw.klEstimator !== undefined && grpo.beta === 0) {
    rejectIneffective({
      parameter: 'options.grpo.klEstimator',
      value: raw.klEstimator,
      because: 'grpo.beta is 0 (no KL term)',
      functionName,
    });
  }
  const mode = grpo.mismatch?.mode ?? TRAINER_DEFAULTS.mismatchMode;
  if (grpo.mismatch?.lowerThreshold !== undefined && !mode.endsWith('-mask')) {
    rejectIneffective({
      parameter: 'options.grpo.mismatch.lowerThreshold',
      value: grpo.mismatch.lowerThreshold,
      because: `only the mask modes reject low ratios (mode is '${mode}')`,
      functionName,
    });
  }
}
