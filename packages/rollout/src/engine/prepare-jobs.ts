import type { Completion } from '@rlvr/core';
import { TopLogprobRecorder } from '../generation/confidence-stop.js';
import { SequenceTracker } from '../generation/stopping-criteria.js';
import type { GenerationSettings, IndexedCompletion, SequenceJob } from './generate-batch.js';

/** What both engines set up before decoding a request. @internal */
export type PreparedJobs = {
  /** One tracker per job (EOS, stop strings, length, text). */
  trackers: SequenceTracker[];
  /** The completions as they stand (unfinished rows end as `abort`). */
  finish: () => IndexedCompletion[];
  /** Set when nothing needs decoding (no jobs, `maxNewTokens` 0, or aborted before start). */
  done?: IndexedCompletion[];
  /** Distinct prompts: consecutive jobs of the same prompt share one prefill row. */
  prompts: number[][];
  /** How many consecutive jobs share each entry of `prompts`. */
  copies: number[];
  /** Top logprobs and confidence stop, when the request asked for `topLogprobs`. */
  recorder?: TopLogprobRecorder;
};

/** The shared start of both engines' generation loops. @internal */
export function prepareJobs(
  jobs: readonly SequenceJob[],
  settings: GenerationSettings,
  hooks: { decode?: (tokenIds: number[]) => string; shouldAbort?: () => boolean },
): PreparedJobs {
  const eos = new Set(settings.eosTokenIds);
  const trackers = jobs.map(
    () =>
      new SequenceTracker({
        maxNewTokens: settings.maxNewTokens,
        eosTokenIds: eos,
        stop: settings.stop,
        decode: hooks.decode,
      }),
  );
  const recorder = settings.topLogprobs
    ? new TopLogprobRecorder(jobs.length, settings.confidenceStop)
    : undefined;
  const finish = () =>
    jobs.map((job, index) => {
      const tracker = trackers[index]!;
      const completion: Completion = {
        text: tracker.text,
        tokenIds: tracker.tokenIds,
        logprobs: tracker.logprobs,
        finishReason: tracker.finishReason ?? 'abort',
        promptTokenIds: job.promptTokenIds,
      };
      if (settings.returnModelLogprobs) completion.modelLogprobs = tracker.modelLogprobs;
      recorder?.attach(index, completion);
      return { promptIndex: job.promptIndex, sampleIndex: job.sampleIndex, completion };
    });
  const prompts: number[][] = [];
  const copies: number[] = [];
  if (jobs.length === 0 || settings.maxNewTokens === 0) {
    for (const tracker of trackers) tracker.finishReason ??= 'length';
    return { trackers, finish, done: finish(), prompts, copies };
  }
  if (hooks.shouldAbort?.()) {
    for (const tracker of trackers) tracker.abort();
    return { trackers, finish, done: finish(), prompts, copies };
  }
  let previousKey = '';
  for (const job of jobs) {
    const key = `${job.promptIndex}:${job.promptTokenIds.length}`;
    if (prompts.length > 0 && key === previousKey) copies[copies.length - 1]!++;
    else {
      prompts.push(job.promptTokenIds);
      copies.push(1);
      previousKey = key;
    }
  }
  return { trackers, finish, prompts, copies, recorder };
}
