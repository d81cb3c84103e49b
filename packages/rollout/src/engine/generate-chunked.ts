import { sequenceRng } from '../generation/samplers.js';
import { readTopLogprobs } from '../generation/top-logprobs.js';
import type { LoopDecoder } from '../loop/loop-decoder.js';
import type {
  GenerationSettings,
  IndexedCompletion,
  SequenceJob,
  TokenEvent,
} from './generate-batch.js';
import { prepareJobs } from './prepare-jobs.js';

/** Largest uniform below 1 in float32 (a float64 draw may round up to 1 otherwise). */
const BELOW_ONE = 1 - 2 ** -24;

/**
 * Generates every sequence of `jobs` on the loop graph, `stepsPerRun` tokens per `session.run`,
 * sampled in-graph with the same per-sequence uniform streams as {@link generateBatch} (one draw
 * per token, none when greedy), so a seed gives the same samples on either engine. EOS, stop
 * strings, length, streaming and abort are handled here between calls; a row that finishes inside
 * a call keeps only its tokens up to the finishing one.
 * @internal
 */
export async function generateChunked(
  decoder: LoopDecoder,
  jobs: readonly SequenceJob[],
  settings: GenerationSettings,
  stepsPerRun: number,
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
  const topK = settings.topLogprobs ?? 0;
  const sampling = {
    ...settings.sampling,
    modelLogprobs: settings.returnModelLogprobs,
    topLogprobs: topK,
  };
  const greedy = sampling.temperature === 0;
  const rngs = jobs.map((job) => sequenceRng(settings.seed, job.promptIndex, job.sampleIndex));
  const usePenalty = sampling.repetitionPenalty !== 1;
  const seen = usePenalty ? jobs.map((job) => new Set(job.promptTokenIds)) : [];
  const seenMask = (rows: readonly number[]) => {
    if (!usePenalty) return undefined;
    const mask = new Uint8Array(rows.length * vocabSize);
    rows.forEach((jobIndex, row) => {
      for (const token of seen[jobIndex]!) mask[row * vocabSize + token] = 1;
    });
    return mask;
  };
  const uniformsFor = (rows: readonly number[], steps: number) => {
    const uniforms = new Float32Array(rows.length * steps);
    if (greedy) return uniforms;
    rows.forEach((jobIndex, row) => {
      if (trackers[jobIndex]!.finished) return;
      const rng = rngs[jobIndex]!;
      for (let step = 0; step < steps; step++)
        uniforms[row * steps + step] = Math.min(rng.next(), BELOW_ONE);
    });
    return uniforms;
  };

  let active = jobs.map((_, index) => index); // job index of each decoder row
  let generated = 0;
  let steps = Math.min(stepsPerRun, settings.maxNewTokens);
  let result = await decoder.start(
    prompts,
    copies,
    uniformsFor(active, steps),
    sampling,
    seenMask(active),
  );
  for (;;) {
    const last = new Int32Array(active.length);
    active.forEach((jobIndex, row) => {
      const tracker = trackers[jobIndex]!;
      for (let step = 0; step < result.steps && !tracker.finished; step++) {
        const at = row * result.steps + step;
        const tokenId = Number(result.tokens[at]!);
        const logprob = result.logprobs[at]!;
        tracker.push(
          tokenId,
          logprob,
          settings.returnModelLogprobs ? result.modelLogprobs[at]! : undefined,
        );
        if (recorder)
          recorder.push(
            jobIndex,
            tracker,
            readTopLogprobs(result.topValues, result.topIds, at, topK),
          );
        if (usePenalty) seen[jobIndex]!.add(tokenId);
        hooks.onToken?.({
          promptIndex: jobs[jobIndex]!.promptIndex,
          sampleIndex: jobs[jobIndex]!.sampleIndex,
          tokenId,
          logprob,
          text: tracker.text,
        });
      }
      last[row] = Number(result.tokens[row * result.steps + result.steps - 1]!);
    });
    generated += result.steps;
    const open = active.filter((jobIndex) => !trackers[jobIndex]!.finished);
    if (open.length === 0) break;
    await hooks.pause?.();
    if (hooks.shouldAbort?.()) {
      for (const jobIndex of open) trackers[jobIndex]!.abort();
      break;
    }
    if (open.length <= active.length / 2) {
      const keep: number[] = [];
      active.forEach((jobIndex, row) => {
        if (!trackers[jobIndex]!.finished) keep.push(row);
      });
      decoder.keepRows(keep);
      active = open;
    }
    steps = Math.min(stepsPerRun, settings.maxNewTokens - generated);
    result = await decoder.next(last, uniformsFor(active, steps), sampling, seenMask(active));
  }
  return finish();
}
