import { InvalidArgumentError, ShapeMismatchError } from '@rlvr/core';
import {
  custom,
  defineOptions,
  integer,
  type OptionsInput,
  optional,
  required,
} from '@rlvr/options';
import type { LlamaModel, TokenSequence } from '@rlvr/trainer';
import type { TopKLogprobs } from '../losses/divergences.js';
import type { TraceRecord } from '../traces/trace-record.js';

/**
 * Produces the teacher's logits at every completion position of each sequence:
 * `result[i][j]` is the vocab-sized logits row that predicts `sequences[i].completionIds[j]`.
 */
export type TeacherLogits = (
  sequences: readonly TokenSequence[],
) => Float32Array[][] | Promise<Float32Array[][]>;

/**
 * A {@link TeacherLogits} backed by a tfjs teacher model (e.g. the RL teacher loaded with
 * `createLlamaModel`). Runs one forward pass per sequence (no padding subtleties).
 *
 * @example
 * ```ts
 * const teacher = teacherFromModel(await createLlamaModel(await loadCheckpoint('teacher/')));
 * ```
 */
export function teacherFromModel(model: LlamaModel): TeacherLogits {
  if (!model || typeof (model as LlamaModel).logits !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'model',
      functionName: 'teacherFromModel',
      value: model,
      expected: 'a LlamaModel from @rlvr/trainer',
    });
  }
  return (sequences) =>
    sequences.map((sequence) => {
      if (sequence.completionIds.length === 0) return [];
      const ids = [...sequence.promptIds, ...sequence.completionIds];
      const rows = model.logits({ inputIds: [ids] })[0]!;
      const start = sequence.promptIds.length - 1;
      return sequence.completionIds.map((_, j) => rows[start + j]!);
    });
}

/** The options of {@link annotateTopK}, declared once (type, validation, README table). */
export const ANNOTATE_TOP_K_OPTIONS = defineOptions(
  {
    k: required(
      integer({ min: 1 }),
      'How many of the largest teacher log-probabilities to keep per token.',
    ),
    encodePrompt: optional(
      custom<(prompt: string) => number[]>(() => true, 'a function (prompt) => token ids'),
      {
        description: "Encodes a trace's prompt when the trace has no recorded `promptTokenIds`.",
        defaultText: 'the recorded `promptTokenIds`',
      },
    ),
  },
  { parameter: 'options', functionName: 'annotateTopK' },
);

/** Options of {@link annotateTopK} (see {@link ANNOTATE_TOP_K_OPTIONS}). */
export type AnnotateTopKOptions = OptionsInput<typeof ANNOTATE_TOP_K_OPTIONS.schema>;

/**
 * Caches the teacher's top-k log-probabilities on trace records (at trace time, to make logit
 * distillation cheap later): returns new records with `topLogprobs` set, one entry per completion
 * token.
 */
export async function annotateTopK(
  traces: readonly TraceRecord[],
  teacher: TeacherLogits,
  options: AnnotateTopKOptions,
): Promise<TraceRecord[]> {
  const FN = 'annotateTopK';
  const { k, encodePrompt } = ANNOTATE_TOP_K_OPTIONS.parse(options);
  const sequences = traces.map((trace, index) => toSequence(trace, index, encodePrompt, FN));
  const logits = await teacher(sequences);
  return traces.map((trace, index) => {
    const rows = logits[index];
    if (!rows || rows.length !== trace.tokenIds.length) {
      throw new ShapeMismatchError({
        parameter: `teacher(sequences)[${index}]`,
        functionName: FN,
        expected: `${trace.tokenIds.length} logits rows`,
        actual: `${rows?.length ?? 'none'}`,
      });
    }
    return { ...trace, topLogprobs: rows.map((row) => topKOf(row, k)) };
  });
}

/** The k largest log-probabilities of a logits row (ties by lower id). @internal */
export function topKOf(logits: ArrayLike<number>, k: number): TopKLogprobs {
  let max = -Infinity;
  for (let index = 0; index < logits.length; index++) max = Math.max(max, logits[index]!);
  let sum = 0;
  for (let index = 0; index < logits.length; index++) sum += Math.exp(logits[index]! - max);
  const logZ = max + Math.log(sum);
  const ids = Array.from({ length: logits.length }, (_, index) => index)
    .sort((a, b) => logits[b]! - logits[a]! || a - b)
    .slice(0, Math.min(k, logits.length));
  return { tokenIds: ids, logprobs: ids.map((id) => logits[id]! - logZ) };
}

/** The training sequence of a trace: prompt ids (recorded, or encoded) + completion ids. @internal */
export function toSequence(
  trace: TraceRecord,
  index: number,
  encodePrompt: ((prompt: string) => number[]) | undefined,
  functionName: string,
): TokenSequence {
  const promptIds = trace.promptTokenIds ?? encodePrompt?.(trace.prompt);
  if (!Array.isArray(promptIds) || promptIds.length === 0) {
    throw new InvalidArgumentError({
      parameter: `traces[${index}].promptTokenIds`,
      functionName,
      value: promptIds,
      expected: 'recorded prompt token ids, or options.encodePrompt to encode the prompt',
    });
  }
  return { promptIds, completionIds: trace.tokenIds };
}
