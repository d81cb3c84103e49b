import { InvalidArgumentError } from '@rlvr/core';
import { custom, defineOptions, func, type OptionsInput, optional, required } from '@rlvr/options';
import type { TraceRecord } from './trace-record.js';

const FN = 'tokenizeTraces';

/** The options of {@link tokenizeTraces}, declared once (type, validation, README table). */
export const TOKENIZE_TRACES_OPTIONS = defineOptions(
  {
    encode: required(
      func<(text: string) => number[]>(
        "the student's tokenizer encode function (text → token ids)",
      ),
      "The student's tokenizer: completion text → token ids (no special tokens added).",
    ),
    eosTokenId: optional(
      custom<number>(
        (value) => Number.isInteger(value) && (value as number) >= 0,
        'a token id (integer >= 0)',
      ),
      {
        description:
          "Appended to a trace that ended by itself (`finishReason: 'stop'`), so the student learns to stop.",
        defaultText: 'nothing appended',
      },
    ),
  },
  { parameter: 'options', functionName: FN },
);

/** Options of {@link tokenizeTraces} (see {@link TOKENIZE_TRACES_OPTIONS}). */
export type TokenizeTracesOptions = OptionsInput<typeof TOKENIZE_TRACES_OPTIONS.schema>;

/**
 * SFT on text: the traces with `tokenIds` re-encoded from the completion text by the student's
 * tokenizer (plus its EOS after a completion that stopped by itself), for a teacher whose token
 * ids are not the student's: a served model (its tokenizer is unknown, or it returned text only).
 * The teacher-token data that no longer lines up is dropped (`logprobs`, `topLogprobs`,
 * `promptTokenIds`: `distillStudent`'s `encodePrompt` encodes the prompt), so such traces train
 * with `loss: { type: 'sft' }` only; logit distillation needs the teacher's own token ids and
 * distribution.
 * @throws {InvalidArgumentError} for a bad option or an `encode` that returns no token ids.
 */
export function tokenizeTraces(
  traces: readonly TraceRecord[],
  options: TokenizeTracesOptions,
): TraceRecord[] {
  const { encode, eosTokenId: eos } = TOKENIZE_TRACES_OPTIONS.parse(options);
  return traces.map((trace, index) => {
    const ids = encode(trace.completion);
    if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id) && id >= 0)) {
      throw new InvalidArgumentError({
        parameter: 'options.encode',
        functionName: FN,
        value: ids,
        expected: `token ids for traces[${index}].completion`,
      });
    }
    const { logprobs: _logprobs, topLogprobs: _top, promptTokenIds: _prompt, ...rest } = trace;
    return {
      ...rest,
      tokenIds: trace.finishReason === 'stop' && eos !== undefined ? [...ids, eos] : [...ids],
    };
  });
}
