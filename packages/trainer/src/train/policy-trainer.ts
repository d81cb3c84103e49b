import {
  ErrorCode,
  InvalidArgumentError,
  NonFiniteError,
  RlvrError,
  rejectIneffective,
  ShapeMismatchError,
} from '@rlvr/core';
import type { LoraAdapter } from '@rlvr/model';
import { parseOptions } from '@rlvr/options';
import type { TokenSequence } from '../batch/token-batch.js';
import type { LlamaModel } from '../model/llama-model.js';
import { LoraAdapters } from '../native/lora-adapters.js';
import { layerSpecOf } from '../native/param-store.js';
import { AdamW } from '../optim/adamw.js';
import {
  accumulateGradients,
  firstNonFinite,
  forwardLogprobs,
  type LossFunction,
  type MicroBatch,
  microBatches,
  type Ragged,
} from './gradient-engine.js';
import { grpoLossFunction, prepareGrpo, validateGrpoInput } from './grpo-loss.js';
import { logitsGradients } from './logits-loss.js';
import { assertStaticFit, StepMemory } from './memory-plan.js';
import { NativeAdamW } from './native-steps.js';
import { NonFiniteGuard } from './non-finite-guard.js';
import { OptimizerSteps, optimizerMetrics, type StepState } from './optimizer-steps.js';
import { COMPLETION_LOGPROBS_OPTIONS, LAYOUT_OPTIONS } from './step-options.js';
import {
  type PolicyTrainerOptions,
  type ResolvedTrainerOptions,
  resolveTrainerOptions,
} from './trainer-options.js';
import type {
  CompletionLogprobsOptions,
  CompletionLogprobsResult,
  GrpoBatch,
  GrpoStepMetrics,
  GrpoStepOptions,
  GrpoStepResult,
  LogitsLossFunction,
  LogitsStepOptions,
  LogitsStepResult,
  PolicyTrainerState,
  SftStepOptions,
  SftStepResult,
} from './trainer-types.js';

export type { GrpoLossConfig, PolicyTrainerOptions } from './trainer-options.js';
export type * from './trainer-types.js';

/** Internals of a {@link PolicyTrainer}, out of its published type. */
const internals = new WeakMap<PolicyTrainer, OptimizerSteps>();

/** The trainer's optimizer steps (they hold its optimizer, schedule and guard). */
function stepsOf(trainer: PolicyTrainer): OptimizerSteps {
  return internals.get(trainer)!;
}

/** The state a trainer's steps share. */
function inner(trainer: PolicyTrainer): StepState {
  return stepsOf(trainer).state;
}

/**
 * Trains a {@link LlamaModel} with GRPO (and SFT): the loss and its per-token gradient come from
 * @rlvr/core's float64 `policyLoss` on the logprobs the tfjs model computes at the sampling
 * temperature (`log softmax(logits / T)`), the chain rule goes through the model's hand-written
 * backward pass, then global-norm clipping and AdamW. Micro-batches accumulate gradients with the
 * *global* token/sequence counts, so the update does not depend on the micro-batch split.
 *
 * Non-finite values: with `onNonFinite: 'skip'` (default) an update whose loss, gradients or
 * logprobs are NaN/±Infinity is not applied and is counted (`skipped: true` in its metrics);
 * `maxConsecutiveSkips` such updates in a row throw a `TrainingStalledError`.
 */
export class PolicyTrainer {
  /** The trained model. */
  readonly model: LlamaModel;
  /** Frozen reference model (only when `grpo.beta` > 0). */
  readonly reference: LlamaModel | undefined;

  /** @internal use {@link createPolicyTrainer}. */
  constructor(model: LlamaModel, reference: LlamaModel | undefined, settings: unknown) {
    const resolved = settings as ResolvedTrainerOptions;
    this.model = model;
    this.reference = reference;
    const { native } = model;
    const state: StepState = {
      optimizer: native
        ? new NativeAdamW(native.lora?.store ?? native.store, resolved.optimizer)
        : new AdamW(resolved.optimizer),
      ...(native ? { memory: new StepMemory(model.config, resolved) } : {}),
      microBatchTokens: resolved.microBatchTokens,
      schedule: resolved.schedule,
      maxGradNorm: resolved.maxGradNorm,
      microBatchSize: resolved.microBatchSize,
      grpo: resolved.grpo,
      guard: new NonFiniteGuard(resolved.onNonFinite, resolved.maxConsecutiveSkips),
    };
    internals.set(this, new OptimizerSteps(model, state));
  }

  /** Optimizer steps taken so far. */
  get step(): number {
    return inner(this).optimizer.step;
  }

  /** The learning rate the next optimizer step will use. */
  get learningRate(): number {
    return stepsOf(this).learningRate;
  }

  /** Updates skipped so far because of non-finite values (with `onNonFinite: 'skip'`). */
  get skippedSteps(): number {
    return inner(this).guard.skippedSteps;
  }

  /** Skipped updates since the last applied one (the `maxConsecutiveSkips` counter). */
  get consecutiveSkips(): number {
    return inner(this).guard.consecutiveSkips;
  }

  /** The sampling temperature of the GRPO logprobs (`grpo.temperature`). */
  get temperature(): number {
    return inner(this).grpo.temperature;
  }

  /**
   * Per-token logprobs and entropies (nats) of each sequence's completion tokens under the current
   * model at temperature T (`log softmax(logits / T)` over the whole vocabulary; default T: the
   * trainer's `grpo.temperature`), without building a backward pass. Non-finite values throw a
   * `NonFiniteError` with `onNonFinite: 'error'`; with `'skip'` they are returned with
   * `finite: false` (nothing is counted: no update is involved).
   *
   * @example
   * ```ts
   * const { logprobs, finite } = trainer.completionLogprobs([{ promptIds: [1, 2], completionIds: [3, 4] }]);
   * ```
   */
  completionLogprobs(
    sequences: readonly TokenSequence[],
    options?: CompletionLogprobsOptions,
  ): CompletionLogprobsResult {
    const functionName = 'PolicyTrainer.completionLogprobs';
    this.model.assertLive('completionLogprobs');
    const { grpo, guard } = inner(this);
    const opts = parseOptions(COMPLETION_LOGPROBS_OPTIONS, options, {
      parameter: 'options',
      functionName,
    });
    const temperature = opts.temperature ?? grpo.temperature;
    const micro = this.microBatches(sequences, functionName);
    const out = forwardLogprobs(this.model, micro, sequences.length, temperature);
    const bad = firstNonFinite(out.logprobs) ?? firstNonFinite(out.entropies);
    if (bad && !guard.skips) {
      const value = out.logprobs[bad[0]]![bad[1]]!;
      throw new NonFiniteError({ parameter: 'logprobs', functionName, index: bad, value });
    }
    return { ...out, finite: bad === undefined };
  }

  /**
   * One GRPO update on a generation batch: optional mismatch correction against the sampler's
   * logprobs, μ = `numIterations` passes with the pre-update logprobs as π_old, one optimizer step
   * per mini-batch, gradient accumulation over micro-batches. Every logprob is at
   * `grpo.temperature`. A non-finite π_old or reference (with `onNonFinite: 'skip'`) skips the
   * whole call: one skipped entry in `steps`.
   *
   * @example
   * ```ts
   * const { steps } = trainer.grpoStep({
   *   sequences: rollouts.map((r) => ({ promptIds: r.promptTokenIds, completionIds: r.tokenIds })),
   *   advantages, behaviourLogprobs: rollouts.map((r) => r.logprobs),
   * });
   * console.log(steps[0].loss, steps[0].clipRatioRegion);
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} | {@link NonFiniteError} for bad
   * input; {@link NonFiniteError} for a non-finite loss, gradient or logprob with
   * `onNonFinite: 'error'`; `TrainingStalledError` after `maxConsecutiveSkips` skips in a row.
   */
  grpoStep(batch: GrpoBatch, options?: GrpoStepOptions): GrpoStepResult {
    const functionName = 'PolicyTrainer.grpoStep';
    this.model.assertLive('grpoStep');
    const { grpo, guard } = inner(this);
    const input = validateGrpoInput(batch, options, grpo, functionName);
    const micro = this.microBatches(input.sequences, functionName);
    const started = performance.now();
    const prepared = guard.guard(
      () => prepareGrpo(this.model, this.reference, micro, input, grpo, functionName),
      () => undefined,
      functionName,
    );
    if (prepared === undefined) return { steps: [stepsOf(this).skipped(started)] };
    const { count, miniBatchSize } = input;
    const steps: GrpoStepMetrics[] = [];
    for (let iteration = 0; iteration < input.numIterations; iteration++) {
      for (let start = 0; start < count; start += miniBatchSize) {
        const end = Math.min(count, start + miniBatchSize);
        const members = new Set(Array.from({ length: end - start }, (_, k) => start + k));
        const lossOf = grpoLossFunction(grpo, input.advantages, prepared, members);
        const metrics = stepsOf(this).optimizerStep(
          () =>
            accumulateGradients(
              this.model,
              micro,
              members,
              prepared.mask,
              lossOf,
              grpo.temperature,
            ),
          functionName,
        );
        steps.push({ ...metrics, ...(prepared.mismatch ? { mismatch: prepared.mismatch } : {}) });
      }
    }
    return { steps };
  }

  /**
   * One supervised step: token-mean cross-entropy on the completion tokens only (prompt tokens
   * carry no loss; temperature 1), optionally packing several sequences per row.
   *
   * @example
   * ```ts
   * trainer.sftStep([{ promptIds: [1, 7, 8], completionIds: [9, 2] }], { pack: true });
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for bad input;
   * {@link NonFiniteError} (`onNonFinite: 'error'`) or `TrainingStalledError` as `grpoStep`.
   */
  sftStep(sequences: readonly TokenSequence[], options?: SftStepOptions): SftStepResult {
    const functionName = 'PolicyTrainer.sftStep';
    this.model.assertLive('sftStep');
    const micro = this.layoutBatches(sequences, options, functionName);
    const mask: Ragged = sequences.map((s) => new Array<number>(s.completionIds.length).fill(1));
    const members = new Set(sequences.map((_, index) => index));
    const tokenCount = mask.reduce((sum, row) => sum + row.length, 0);
    if (tokenCount === 0) {
      throw new InvalidArgumentError({
        parameter: 'sequences',
        functionName,
        value: sequences,
        expected: 'at least one completion token to train on',
      });
    }
    const crossEntropy: LossFunction = (_rows, current) => {
      let loss = 0;
      const gradLogprobs = current.map((row) =>
        row.map((logprob) => {
          loss -= logprob / tokenCount;
          return -1 / tokenCount;
        }),
      );
      return { loss, gradLogprobs, gradEntropy: undefined, result: undefined };
    };
    return optimizerMetrics(
      stepsOf(this).optimizerStep(
        () =>
          accumulateGradients(this.model, micro, members, mask, crossEntropy, 1, this.maskSeeds()),
        functionName,
      ),
    );
  }

  /**
   * One optimizer step on a loss defined on the student's full logits at the completion positions
   * (logit distillation, custom objectives): per micro-batch, `lossOf` gets each completion
   * token's raw logits row (no temperature) and returns the loss and d loss / d logits; the
   * trainer back-propagates through the model, accumulates over micro-batches, clips and applies
   * AdamW, as `sftStep`. With `dLogits = (softmax − onehot(target)) / totalTokens` it is exactly
   * `sftStep`. A non-finite loss or `dLogits` skips the update (`onNonFinite: 'skip'`).
   *
   * @example
   * ```ts
   * // forward KL to a teacher distribution q (token mean)
   * trainer.logitsStep(sequences, (rows, { totalTokens }) => {
   *   let loss = 0;
   *   const dLogits = rows.map((row) => {
   *     const p = softmax(row.logits);
   *     const q = teacherProbs(row.sequence, row.index);
   *     loss += klDivergence(q, p) / totalTokens;
   *     return p.map((pv, v) => (pv - q[v]!) / totalTokens);
   *   });
   *   return { loss, dLogits };
   * });
   * ```
   * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for bad input or a `dLogits` of
   * the wrong shape; {@link NonFiniteError} for a non-finite loss, d logits or gradient with
   * `onNonFinite: 'error'`; `TrainingStalledError` after `maxConsecutiveSkips` skips in a row.
   */
  logitsStep(
    sequences: readonly TokenSequence[],
    lossOf: LogitsLossFunction,
    options?: LogitsStepOptions,
  ): LogitsStepResult {
    const functionName = 'PolicyTrainer.logitsStep';
    this.model.assertLive('logitsStep');
    if (typeof lossOf !== 'function') {
      throw new InvalidArgumentError({
        parameter: 'lossOf',
        functionName,
        value: lossOf,
        expected: 'a function (rows, context) => { loss, dLogits }',
      });
    }
    const micro = this.layoutBatches(sequences, options, functionName);
    return optimizerMetrics(
      stepsOf(this).optimizerStep(
        () => logitsGradients(this.model, micro, sequences, lossOf, functionName),
        functionName,
      ),
    );
  }

  /**
   * The seeds of the next update's LoRA dropout masks, one per micro-batch: a function of the
   * adapters' seed, the update's number and the micro-batch (so a resumed run draws the same).
   */
  private maskSeeds(): (micro: number) => number {
    const seed = this.model.native?.lora?.settings.seed ?? 0;
    const update = inner(this).optimizer.step + 1;
    return (micro) =>
      (Math.imul(seed + 1, 0x9e3779b1) ^ Math.imul(update, 0x85ebca6b) ^ micro) >>> 0;
  }

  /** The optimizer state and counters as plain data. */
  getState(): PolicyTrainerState {
    const { optimizer, guard } = inner(this);
    return {
      optimizer: optimizer.getState(),
      skippedSteps: guard.skippedSteps,
      consecutiveSkips: guard.consecutiveSkips,
    };
  }

  /** Restores {@link PolicyTrainer.getState} output (the model weights are restored separately). */
  setState(state: PolicyTrainerState): void {
    const { optimizer, guard } = inner(this);
    optimizer.setState(state.optimizer);
    guard.skippedSteps = state.skippedSteps;
    guard.consecutiveSkips = state.consecutiveSkips ?? 0;
  }

  /** Frees the optimizer state and the reference model (not the trained model). */
  dispose(): void {
    inner(this).optimizer.dispose();
    this.reference?.dispose();
  }

  private layoutBatches(
    sequences: readonly TokenSequence[],
    options: unknown,
    functionName: string,
  ): MicroBatch[] {
    const layout = parseOptions(LAYOUT_OPTIONS, options, { parameter: 'options', functionName });
    return this.microBatches(sequences, functionName, layout);
  }

  /**
   * The micro-batches of `sequences`: at most `microBatchSize` sequences and the token budget
   * (`microBatchTokens`, or on the native engine the memory plan's), each with its activation
   * mode on the native engine (a micro-batch that cannot fit is a `MemoryLimitError` now, before
   * any forward).
   */
  private microBatches(
    sequences: readonly TokenSequence[],
    functionName: string,
    layout?: SftStepOptions,
  ): MicroBatch[] {
    const { microBatchSize, memory, microBatchTokens } = inner(this);
    const longest = Array.isArray(sequences)
      ? sequences.reduce(
          (max, s) => Math.max(max, (s?.promptIds?.length ?? 0) + (s?.completionIds?.length ?? 0)),
          1,
        )
      : 1;
    const budget = memory ? memory.budget(layout?.rowLength ?? longest) : microBatchTokens;
    const micro = microBatches(this.model, microBatchSize, sequences, functionName, layout, budget);
    if (memory) {
      for (const entry of micro) {
        const { batchSize, seqLen } = entry.batch.input;
        entry.keep = memory.keep(batchSize, seqLen, functionName);
      }
    }
    return micro;
  }
}

/**
 * Creates a {@link PolicyTrainer} for a model. With `grpo.beta` > 0 a frozen copy of the model's
 * current weights (or `referenceCheckpoint`) becomes the reference policy; with β = 0 none is
 * kept. Unknown option keys and options without effect in the combination are errors.
 *
 * @example
 * ```ts
 * await selectBackend();
 * const model = await createLlamaModel(checkpoint);
 * const trainer = await createPolicyTrainer(model, {
 *   schedule: { learningRate: 1e-4, schedule: 'cosine', warmupSteps: 10, totalSteps: 500 },
 *   maxGradNorm: 1, microBatchSize: 16,
 *   grpo: { temperature: 0.7, epsilonLow: 0.2, epsilonHigh: 0.28, lossAggregation: 'token-mean' },
 * });
 * const { steps } = trainer.grpoStep({ sequences, advantages });
 * ```
 * @throws {InvalidArgumentError} naming the offending option (`UNKNOWN_OPTION` with the closest
 * valid key, `INEFFECTIVE_OPTION` for an option that would do nothing).
 */
export async function createPolicyTrainer(
  model: LlamaModel,
  options?: PolicyTrainerOptions,
): Promise<PolicyTrainer> {
  const functionName = 'createPolicyTrainer';
  if (model === null || typeof model !== 'object' || !(model.params instanceof Map)) {
    throw new InvalidArgumentError({
      parameter: 'model',
      functionName,
      value: model,
      expected: 'a LlamaModel from createLlamaModel()',
    });
  }
  model.assertLive(functionName);
  const resolved = resolveTrainerOptions(options, functionName);
  checkEngineOptions(model, options ?? {}, resolved, functionName);
  const { native } = model;
  if (native) {
    // refuses, before anything is allocated, a model that cannot train within the limit
    assertStaticFit(model.config, resolved, functionName);
    if (resolved.lora) {
      const adapters = new LoraAdapters(
        layerSpecOf(model.config),
        model.config.num_hidden_layers,
        resolved.lora,
      );
      if (resolved.lora.adapter) loadAdapterWeights(adapters, resolved.lora.adapter, functionName);
      native.lora = adapters;
    }
  }
  const reference =
    resolved.grpo.beta > 0
      ? resolved.lora
        ? model.baseModel()
        : resolved.referenceCheckpoint
          ? await model.frozenCopy(resolved.referenceCheckpoint)
          : await model.frozenCopy()
      : undefined;
  return new PolicyTrainer(model, reference, resolved);
}

/** Copies a PEFT adapter's tensors into `adapters` (every one present, same shapes). */
function loadAdapterWeights(
  adapters: LoraAdapters,
  adapter: LoraAdapter,
  functionName: string,
): void {
  const given = new Map(adapter.tensors.map((t) => [t.name, t]));
  for (const expected of adapters.toNamedTensors()) {
    const tensor = given.get(expected.name);
    if (!tensor || tensor.data.length !== expected.data.length) {
      throw new ShapeMismatchError({
        parameter: `options.lora.adapter.tensors['${expected.name}']`,
        functionName,
        expected: `shape [${expected.shape.join(', ')}] (this model's adapter)`,
        actual: tensor ? `[${tensor.shape.join(', ')}]` : 'missing',
      });
    }
    given.delete(expected.name);
  }
  if (given.size > 0) {
    const [name] = given.keys();
    throw new InvalidArgumentError({
      parameter: `options.lora.adapter.tensors['${name}']`,
      functionName,
      value: name,
      expected: "a tensor of this model's adapter (a layer or projection it has)",
    });
  }
  adapters.load(new Map(adapter.tensors.map((t) => [t.name, t.data])));
}

/** The options that need the native engine, or a model without adapters. */
function checkEngineOptions(
  model: LlamaModel,
  options: PolicyTrainerOptions,
  resolved: ResolvedTrainerOptions,
  functionName: string,
): void {
  if (!model.native) {
    if (resolved.lora) {
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        `${functionName}(): 'options.lora' needs a model on the native engine (onnxruntime-node installed; createLlamaModel(checkpoint, { engine: 'native' })); this one is on '${model.engine}'`,
      );
    }
    if (options.gradientCheckpointing === true) {
      rejectIneffective({
        parameter: 'options.gradientCheckpointing',
        value: true,
        because:
          "the model is on the tfjs engine, which keeps every activation (checkpointing is the native engine's)",
        functionName,
      });
    }
    return;
  }
  if (model.native.lora) {
    throw new InvalidArgumentError({
      parameter: 'model',
      functionName,
      value: '(a model with LoRA adapters)',
      expected: 'a model without adapters (another trainer attached its own): create a new model',
    });
  }
  if (resolved.lora && resolved.referenceCheckpoint) {
    rejectIneffective({
      parameter: 'options.referenceCheckpoint',
      value: '(a checkpoint)',
      because: 'with LoRA the reference policy is the base model with its adapters off',
      functionName,
    });
  }
}
