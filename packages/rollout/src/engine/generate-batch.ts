import type { Completion, ConfidenceStop } from '@rlvr/core';
import type { ResolvedLogitsOptions } from '../generation/logits-processors.js';
import { sequenceRng, TokenSampler } from '../generation/samplers.js';
import { topLogprobsOf } from '../generation/top-logprobs.js';
import type { BatchDecoder } from './batch-decoder.js';
import { prepareJobs } from './prepare-jobs.js';

/** One sequence to generate: which prompt and sample it is, and the prompt's token ids. @internal */
export type SequenceJob = { promptIndex: number; sampleIndex: number; promptTokenIds: number[] };

/** Plain-data generation settings shared by every sequence of a request. @internal */
export type GenerationSettings = {
  sampling: ResolvedLogitsOptions;
  maxNewTokens: number;
  stop: string[];
  seed: number;
  returnModelLogprobs: boolean;
  eosTokenIds: number[];
  /** Top logprobs per token (`request.topLogprobs`; 0 or absent: none). */
  topLogprobs?: number;
  /** `request.confidenceStop` (with `topLogprobs`). */
  confidenceStop?: ConfidenceStop;
};

/** A token event, for streaming. */
export type TokenEvent = {
  promptIndex: number;
  sampleIndex: number;
  tokenId: number;
  logprob: number;
  /** Decoded completion text so far (cut before a stop string once matched). */
  text: string;
};

/** A finished completion tagged with its prompt and sample. @internal */
export type IndexedCompletion = {
  promptIndex: number;
  sampleIndex: number;
  completion: Completion;
};

/**
 * Generates every sequence of `jobs` as one batch on `decoder`: per step, each unfinished row is
 * sampled with its own seeded stream (so results do not depend on batching), tracked for EOS,
 * stop strings and length, and finished rows are dropped from the batch once half of them are done.
 * @internal
 */
export async function generateBatch(
  decoder: BatchDecoder,
  jobs: readonly SequenceJob[],
  settings: GenerationSettings,
  hooks: {
    decode?: (tokenIds: number[]) => string;
    shouldAbort?: () => boolean;
    /** Awaited between steps (lets the caller's event loop deliver an abort). */
    pause?: () => Promise<void>;
    onToken?: (event: TokenEvent) => void;
  } = {},
): Promise<IndexedCompletion[]> {
  const { trackers, finish, done, prompts, copies, recorder } = prepareJobs(jobs, settings, hooks);
  if (done) return done;

  const vocabSize = decoder.vocabSize;
  const sampler = new TokenSampler(vocabSize, settings.sampling);
  const rngs = jobs.map((job) => sequenceRng(settings.seed, job.promptIndex, job.sampleIndex));
  const usePenalty = settings.sampling.repetitionPenalty !== 1;
  const seen = usePenalty ? jobs.map((job) => new Set(job.promptTokenIds)) : [];
  const penaltyBuffers = usePenalty ? jobs.map(() => new Int32Array(0)) : [];
  const refreshPenalty = (index: number) => {
    penaltyBuffers[index] = Int32Array.from(seen[index]!);
  };
  if (usePenalty) for (let index = 0; index < jobs.length; index++) refreshPenalty(index);

  let active = jobs.map((_, index) => index); // job index of each decoder row
  let logits = await decoder.start(prompts, copies);
  for (;;) {
    const tokens = new Int32Array(active.length);
    active.forEach((jobIndex, row) => {
      const tracker = trackers[jobIndex]!;
      if (tracker.finished) return;
      const sampled = sampler.sample(logits, row * vocabSize, rngs[jobIndex]!, {
        modelLogprob: settings.returnModelLogprobs,
        penaltyTokens: usePenalty ? penaltyBuffers[jobIndex] : undefined,
      });
      tokens[row] = sampled.tokenId;
      tracker.push(sampled.tokenId, sampled.logprob, sampled.modelLogprob);
      const k = settings.topLogprobs ?? 0;
      if (recorder)
        recorder.push(jobIndex, tracker, topLogprobsOf(logits, row * vocabSize, vocabSize, k));
      if (usePenalty && !seen[jobIndex]!.has(sampled.tokenId)) {
        seen[jobIndex]!.add(sampled.tokenId);
        refreshPenalty(jobIndex);
      }
      hooks.onToken?.({
        promptIndex: jobs[jobIndex]!.promptIndex,
        sampleIndex: jobs[jobIndex]!.sampleIndex,
        tokenId: sampled.tokenId,
        logprob: sampled.logprob,
        text: tracker.text,
      });
    });
    const open = active.filter((jobIndex) => !trackers[jobIndex]!.finished);
    if (open.length === 0) break;
    await hooks.pause?.();
    if (hooks.shouldAbort?.()) {
      for (const jobIndex of open) trackers[jobIndex]!.abort();
      break;
    }
    let stepTokens = tokens;
    if (open.length <= active.length / 2) {
      const keep: number[] = [];
      active.forEach((jobIndex, row) => {
        if (!trackers[jobIndex]!.finished) keep.push(row);
      });
      decoder.keepRows(keep);
      stepTokens = Int32Array.from(keep, (row) => tokens[row]!);
      active = open;
    }
    logits = await decoder.next(stepTokens);
  }
  return finish();
}
