import { InvalidArgumentError, validateOptions } from '@rlvr/core';
import type { TraceRecord } from './trace-record.js';

/** Options of {@link tokenizeTraces}. */
export type TokenizeTracesOptions = {
  /** The student's tokenizer: completion text → token ids (no special tokens added). */
  encode: (text: string) => number[];
  /** Appended to a trace that ended by itself (`finishReason: 'stop'`), so the student learns to stop. */
  eosTokenId?: number;
};

const FN = 'tokenizeTraces';

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
  validateOptions(options, {
    parameter: 'options',
    functionName: FN,
    known: ['encode', 'eosTokenId'],
  });
  if (typeof options?.encode !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.encode',
      functionName: FN,
      value: options?.encode,
      expected: "the student's tokenizer encode function (text → token ids)",
    });
  }
  const eos = options.eosTokenId;
  if (eos !== undefined && (!Number.isInteger(eos) || eos < 0)) {
    throw new InvalidArgumentError({
      parameter: 'options.eosTokenId',
      functionName: FN,
      value: eos,
      expected: 'a token id (integer >= 0)',
    });
  }
  return traces.map((trace, index) => {
    const ids = options.encode(trace.completion);
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
