import type { Rng } from '@rlvr/core';
import type { ResolvedLogitsOptions } from '../generation/logits-processors.js';
import { TokenSampler } from '../generation/samplers.js';
import type { LoopDecoder } from '../loop/loop-decoder.js';
import type { OnnxDecoder } from '../onnx/onnx-decoder.js';

/** The tokens one decoder call sampled for one row (none for a held row). @internal */
export type RowTokens = { tokens: number[]; logprobs: number[] };

/** One row of a multi-turn call: sample from it (with its stream, up to `budget` tokens) or hold it. */
export type RowPlan = { hold: true } | { hold: false; rng: Rng; budget: number };

/**
 * What the multi-turn driver needs from an engine: prefill the prompts and sample, feed per-row
 * chunks after the cache and sample, undo a row's unused tokens, drop rows. Either engine's
 * decoder behind it samples the same tokens from the same per-row streams. @internal
 */
export interface TurnStepper {
  start(
    prompts: readonly (readonly number[])[],
    copies: readonly number[],
    plans: readonly RowPlan[],
  ): Promise<RowTokens[]>;
  feed(chunks: readonly (readonly number[])[], plans: readonly RowPlan[]): Promise<RowTokens[]>;
  /** Row `row` used all but the last `unused` tokens of the last call. */
  rewind(row: number, unused: number): void;
  keepRows(rows: readonly number[]): void;
}

/** Largest uniform below 1 in float32 (as the loop engine's single-turn driver uses). */
const BELOW_ONE = 1 - 2 ** -24;

/** The optimum engine: one token per row and call, sampled in JavaScript. @internal */
export function optimumStepper(decoder: OnnxDecoder, sampling: ResolvedLogitsOptions): TurnStepper {
  const vocab = decoder.vocabSize;
  const sampler = new TokenSampler(vocab, sampling);
  const sample = (logits: Float32Array, plans: readonly RowPlan[]): RowTokens[] =>
    plans.map((plan, row) => {
      if (plan.hold) return { tokens: [], logprobs: [] };
      const drawn = sampler.sample(logits, row * vocab, plan.rng);
      return { tokens: [drawn.tokenId], logprobs: [drawn.logprob] };
    });
  return {
    start: async (prompts, copies, plans) => sample(await decoder.start(prompts, copies), plans),
    feed: async (chunks, plans) =>
      sample(
        await decoder.feed(
          chunks,
          plans.map((plan) => plan.hold),
        ),
        plans,
      ),
    rewind: () => {}, // one token per call: a finished row's last token is never fed
    keepRows: (rows) => decoder.keepRows(rows),
  };
}

/** The loop engine: up to `stepsPerRun` tokens per row and call, sampled in-graph. @internal */
export function loopStepper(
  decoder: LoopDecoder,
  sampling: ResolvedLogitsOptions,
  stepsPerRun: number,
): TurnStepper {
  const settings = { ...sampling, modelLogprobs: false, topLogprobs: 0 };
  const greedy = sampling.temperature === 0;
  const uniformsFor = (plans: readonly RowPlan[]) => {
    const budget = Math.max(1, ...plans.map((plan) => (plan.hold ? 0 : plan.budget)));
    const steps = Math.min(stepsPerRun, budget);
    const uniforms = new Float32Array(plans.length * steps);
    if (!greedy) {
      plans.forEach((plan, row) => {
        if (plan.hold) return;
        // draw only what the row can use this turn, so its stream does not depend on the batch
        const draws = Math.min(steps, plan.budget);
        for (let step = 0; step < draws; step++)
          uniforms[row * steps + step] = Math.min(plan.rng.next(), BELOW_ONE);
      });
    }
    return { uniforms, steps };
  };
  const read = (
    result: { tokens: BigInt64Array; logprobs: Float32Array },
    plans: readonly RowPlan[],
    steps: number,
  ): RowTokens[] =>
    plans.map((plan, row) => {
      if (plan.hold) return { tokens: [], logprobs: [] };
      const count = Math.min(steps, plan.budget);
      const tokens: number[] = [];
      const logprobs: number[] = [];
      for (let step = 0; step < count; step++) {
        tokens.push(Number(result.tokens[row * steps + step]!));
        logprobs.push(result.logprobs[row * steps + step]!);
      }
      // tokens past the row's budget were sampled with a zero uniform: never used, undone now
      if (count < steps) decoder.rewind(row, steps - count);
      return { tokens, logprobs };
    });
  let kept: readonly number[] | undefined; // rows kept for the next call (of the current rows)
  let rows = 0;
  return {
    async start(prompts, copies, plans) {
      rows = plans.length;
      const { uniforms, steps } = uniformsFor(plans);
      return read(await decoder.start(prompts, copies, uniforms, settings), plans, steps);
    },
    async feed(chunks, plans) {
      const { uniforms, steps } = uniformsFor(plans);
      // the loop graph reads every current row and keeps `kept`: dropped rows feed a placeholder
      const all: (readonly number[])[] = Array.from({ length: rows }, () => [0]);
      const hold = Array.from({ length: rows }, () => true);
      (kept ?? all.map((_, row) => row)).forEach((row, index) => {
        all[row] = chunks[index]!;
        hold[row] = plans[index]!.hold;
      });
      const result = await decoder.feed(all, hold, uniforms, settings);
      rows = plans.length;
      kept = undefined;
      return read(result, plans, steps);
    },
    rewind: (row, unused) => decoder.rewind(row, unused),
    keepRows(next) {
      kept = [...next];
      decoder.keepRows(next);
    },
  };
}
