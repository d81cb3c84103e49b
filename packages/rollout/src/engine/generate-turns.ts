import type { FinishReason } from '@rlvr/core';
import type { ResolvedLogitsOptions } from '../generation/logits-processors.js';
import { sequenceRng } from '../generation/samplers.js';
import { SequenceTracker } from '../generation/stopping-criteria.js';
import type { SequenceJob } from './generate-batch.js';
import type { RowPlan, RowTokens, TurnStepper } from './turn-steppers.js';

/** Plain-data settings of a multi-turn generation call (one per worker). @internal */
export type TurnSettings = {
  sampling: ResolvedLogitsOptions;
  /** Token limit of the first turn (later turns get theirs from the resume actions). */
  maxNewTokens: number;
  /** Stop strings of a turn: the request's and the template's tool-call end. */
  stop: string[];
  seed: number;
  eosTokenIds: number[];
};

/** An assistant turn that ended, handed to the environment side. @internal */
export type PausedRow = {
  /** Index of the job in the call's `jobs`. */
  job: number;
  tokenIds: number[];
  logprobs: number[];
  finishReason: FinishReason;
};

/** What the environment side says about a paused row. @internal */
export type RowAction =
  | { done: true }
  | {
      done: false;
      /** The environment's tokens (after the turn's last token, which the driver feeds first). */
      tokens: number[];
      /** Token limit of the next turn. */
      maxNewTokens: number;
    };

/** Hooks of {@link generateTurns}. @internal */
export type TurnHooks = {
  decode?: (tokenIds: number[]) => string;
  shouldAbort?: () => boolean;
  pause?: () => Promise<void>;
  /** Every row's turn has ended: step the environments; one action per paused row, in order. */
  onPause: (rows: PausedRow[]) => Promise<RowAction[]>;
};

/** The random stream of turn `turn` of a sequence (turn 0 is the single-turn stream). @internal */
export function turnRng(seed: number, job: SequenceJob, turn: number) {
  const rng = sequenceRng(seed, job.promptIndex, job.sampleIndex);
  return turn === 0 ? rng : rng.derive(`turn-${turn}`);
}

/** Distinct consecutive prompts (by content) and how many jobs share each. */
function groupPrompts(jobs: readonly SequenceJob[]): { prompts: number[][]; copies: number[] } {
  const prompts: number[][] = [];
  const copies: number[] = [];
  for (const job of jobs) {
    const last = prompts.at(-1);
    const same =
      last !== undefined &&
      last.length === job.promptTokenIds.length &&
      last.every((token, index) => token === job.promptTokenIds[index]);
    if (same) copies[copies.length - 1]!++;
    else {
      prompts.push(job.promptTokenIds);
      copies.push(1);
    }
  }
  return { prompts, copies };
}

/**
 * Multi-turn generation on one decoder: every row's turn runs until it ends (EOS, a stop string —
 * the template's tool-call end among them — or its token limit) while finished rows wait (held:
 * fed nothing that counts); when every row has ended its turn, `onPause` steps the environments,
 * finished trajectories leave the batch, and the others continue on the same KV cache with their
 * last token and the environment's tokens fed as one chunk (no re-prefill). Each turn of each
 * sequence samples from its own stream, so trajectories do not depend on batching or workers.
 * @internal
 */
export async function generateTurns(
  stepper: TurnStepper,
  jobs: readonly SequenceJob[],
  settings: TurnSettings,
  hooks: TurnHooks,
): Promise<void> {
  if (jobs.length === 0) return;
  const eos = new Set(settings.eosTokenIds);
  const trackerFor = (maxNewTokens: number) =>
    new SequenceTracker({
      maxNewTokens,
      eosTokenIds: eos,
      stop: settings.stop,
      decode: hooks.decode,
    });
  const turns = jobs.map(() => 0);
  const trackers = jobs.map(() => trackerFor(settings.maxNewTokens));
  const limits = jobs.map(() => settings.maxNewTokens);
  const rngs = jobs.map((job) => turnRng(settings.seed, job, 0));
  const reported = jobs.map(() => false);
  let active = jobs.map((_, index) => index); // job of each decoder row
  const planOf = (job: number): RowPlan =>
    trackers[job]!.finished
      ? { hold: true }
      : {
          hold: false,
          rng: rngs[job]!,
          budget: limits[job]! - trackers[job]!.tokenIds.length,
        };
  const { prompts, copies } = groupPrompts(jobs);
  let results: RowTokens[] = await stepper.start(prompts, copies, active.map(planOf));
  for (;;) {
    results.forEach((result, row) => {
      const tracker = trackers[active[row]!]!;
      for (let index = 0; index < result.tokens.length; index++) {
        tracker.push(result.tokens[index]!, result.logprobs[index]!);
        if (tracker.finished) {
          stepper.rewind(row, result.tokens.length - 1 - index);
          break;
        }
      }
    });
    await hooks.pause?.();
    if (hooks.shouldAbort?.()) return;
    const open = active.filter((job) => !trackers[job]!.finished);
    if (open.length > 0) {
      const last = active.map((job) => [trackers[job]!.tokenIds.at(-1) ?? 0]);
      results = await stepper.feed(last, active.map(planOf));
      continue;
    }
    const paused = active.filter((job) => !reported[job]);
    const actions = await hooks.onPause(
      paused.map((job) => ({
        job,
        tokenIds: trackers[job]!.tokenIds,
        logprobs: trackers[job]!.logprobs,
        finishReason: trackers[job]!.finishReason!,
      })),
    );
    if (hooks.shouldAbort?.()) return;
    const chunks = new Map<number, number[]>();
    paused.forEach((job, index) => {
      const action = actions[index]!;
      reported[job] = true;
      if (action.done) return;
      const lastToken = trackers[job]!.tokenIds.at(-1)!;
      chunks.set(job, [lastToken, ...action.tokens]);
      turns[job]! += 1;
      trackers[job] = trackerFor(action.maxNewTokens);
      limits[job] = action.maxNewTokens;
      rngs[job] = turnRng(settings.seed, jobs[job]!, turns[job]!);
      reported[job] = false;
    });
    const keep: number[] = [];
    active.forEach((job, row) => {
      if (chunks.has(job)) keep.push(row);
    });
    if (keep.length === 0) return;
    if (keep.length < active.length) {
      stepper.keepRows(keep);
      active = keep.map((row) => active[row]!);
    }
    results = await stepper.feed(
      active.map((job) => chunks.get(job)!),
      active.map(planOf),
    );
  }
}
