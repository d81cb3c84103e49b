import {
  AbortedError,
  type Completion,
  createRng,
  InvalidArgumentError,
  type RngState,
  throwIfAborted,
} from '@rlvr/core';
import type { GrpoConfig, ResolvedGrpoConfig } from './grpo-config.js';
import { meanStd } from './grpo-metrics.js';
import type { Collected, RoundSource } from './grpo-sampling.js';
import { nextPrompts, request } from './grpo-sampling.js';
import type { PromptRecord } from './prompt-dataset.js';
import type { RunContext } from './run-context.js';

/**
 * One sampler request issued ahead of the step that consumes it (asynchronous GRPO,
 * `maxStaleness ≥ 1`). @internal
 */
export type InFlight = {
  /** The generation step that will consume it. */
  step: number;
  /** Policy version (generation steps completed = weight pushes) when it was issued. */
  policyVersion: number;
  records: PromptRecord[];
  /** The sampler's answer; a branch of it is already `.catch`-ed (no unhandled rejection). */
  result: Promise<unknown>;
  controller: AbortController;
  /** Data position and RNG before this request drew its prompts and seed (what a resume restores). */
  before: { rng: RngState; cursor: { epoch: number; position: number } };
};

/**
 * Checks `maxStaleness` and its combinations: > 0 needs `mismatch` (the stale behaviour logprobs
 * are corrected by importance sampling) and is not combined with `dynamicSampling` (its extra
 * rounds would interleave with the prefetched requests and break deterministic resume). @internal
 */
export function checkAsyncConfig(
  raw: Partial<GrpoConfig>,
  resolved: ResolvedGrpoConfig,
  functionName: string,
): void {
  if (resolved.maxStaleness === 0) return;
  if (raw.mismatch === undefined) {
    throw new InvalidArgumentError({
      parameter: 'config.mismatch',
      functionName,
      value: undefined,
      expected: `an importance-sampling correction (e.g. { mode: 'token-truncate', cap: 2 }) since config.maxStaleness is ${resolved.maxStaleness}: groups sampled by older weights are off-policy`,
    });
  }
  if (resolved.dynamic !== undefined) {
    throw new InvalidArgumentError({
      parameter: 'config.dynamicSampling',
      functionName,
      value: raw.dynamicSampling,
      expected: 'off (false or unset) with config.maxStaleness > 0 (not supported together yet)',
    });
  }
}

/** Issues the request of `step` now, tagged with the current policy version. */
function issue(run: RunContext, step: number): InFlight {
  const before = { rng: run.rng.getState(), cursor: { ...run.cursor } };
  const records = nextPrompts(run, run.config.promptsPerStep);
  const controller = new AbortController();
  const result = run.sampler.sample(request(run, records), { signal: controller.signal });
  result.catch(() => undefined);
  return { step, policyVersion: run.completed, records, result, controller, before };
}

/**
 * Keeps the requests of steps `step … step + maxStaleness` (at most `lastStep`) in flight: the
 * bounded queue that overlaps generation with training. @internal
 */
export function topUp(run: RunContext, step: number, lastStep: number): void {
  run.inflight ??= [];
  // the weights the sampler holds before this process's first update
  run.weightHistory ??= { current: run.policy.step, lastCurrent: new Map() };
  const queue = run.inflight;
  let next = queue.length > 0 ? queue[queue.length - 1]!.step + 1 : step;
  while (next <= Math.min(step + run.config.maxStaleness, lastStep)) {
    queue.push(issue(run, next));
    next += 1;
  }
}

/** The RNG and data position a step restarts from: before the oldest in-flight request. @internal */
export function restartPoint(run: RunContext): InFlight['before'] | undefined {
  return run.inflight?.[0]?.before;
}

/** Aborts and forgets every in-flight request (abort, error, dispose). @internal */
export function discardInflight(run: RunContext): void {
  for (const entry of run.inflight ?? []) {
    entry.controller.abort(new AbortedError({ operation: 'GrpoTrainer (in-flight request)' }));
  }
  if (run.inflight) run.inflight.length = 0;
}

/** Resolves with `promise`, or rejects with `AbortedError` as soon as `signal` aborts. */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  throwIfAborted(signal, 'GrpoTrainer.step()');
  return new Promise<T>((resolve, reject) => {
    const onAbort = () =>
      reject(new AbortedError({ operation: 'GrpoTrainer.step()', cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Records that the weight snapshot `snapshotStep` replaced the current one during the step being
 * run: the old one was current up to the version before it (`run.completed`). @internal
 */
export function notePush(run: RunContext, snapshotStep: number): void {
  const history = run.weightHistory;
  if (history === undefined || history.current === snapshotStep) return;
  history.lastCurrent.set(history.current, run.completed);
  history.current = snapshotStep;
}

/**
 * The version a group was sampled with: the request's, or older when a completion reports
 * (`policyVersion`: the `step` of the weight snapshot that sampled it, as queue workers do)
 * weights that had been replaced before the request was issued: then the last version at which
 * they were current. Snapshots this run did not push are ignored.
 */
function groupVersion(run: RunContext, issued: number, completions: readonly Completion[]): number {
  let version = issued;
  for (const completion of completions) {
    const reported = (completion as Completion & { policyVersion?: unknown }).policyVersion;
    if (typeof reported !== 'number') continue;
    const last = run.weightHistory?.lastCurrent.get(reported);
    if (last !== undefined && last < version) version = last;
  }
  return version;
}

/**
 * The round source of an asynchronous step: tops the queue up, then waits for this step's
 * request (issued up to `maxStaleness` steps ago). @internal
 */
export function asyncSource(run: RunContext, step: number, lastStep: number): RoundSource {
  return async (signal) => {
    topUp(run, step, lastStep);
    const entry = run.inflight![0]!;
    run.inflight!.shift();
    // On a failure before the update, the step restores `restartPoint` taken when it began.
    const result = await raceSignal(entry.result, signal);
    return {
      records: entry.records,
      result,
      staleness: (completions) =>
        run.completed - groupVersion(run, entry.policyVersion, completions),
    };
  };
}

/** Restores the RNG and data position from before the oldest in-flight request, then discards them all. @internal */
export function rewindInflight(run: RunContext): void {
  const before = restartPoint(run);
  if (before === undefined) return;
  run.rng = createRng(before.rng);
  run.cursor = { ...before.cursor };
  discardInflight(run);
}

/** `async/*` metrics of a step (only when `maxStaleness > 0`). @internal */
export function asyncMetrics(run: RunContext, collected: Collected): Record<string, number> {
  const { mean } = meanStd(collected.staleness);
  return {
    'async/staleness_mean': mean,
    'async/staleness_max': collected.staleness.length > 0 ? Math.max(...collected.staleness) : 0,
    'async/dropped_stale_groups': collected.droppedStale,
    'async/in_flight': run.inflight?.length ?? 0,
  };
}
