import type { FinishReason } from '@rlvr/core';
import { custom, defineOptions, type OptionsInput, optional } from '@rlvr/options';

/** Where a stop string was found in a text. */
export type StopMatch = { index: number; stop: string };

/**
 * The earliest stop string in `text` that starts at or after `fromIndex` (ties: the longest stop).
 *
 * @example
 * ```ts
 * findStopString('x = 1\n\ny', ['\n\n'], 0); // { index: 5, stop: '\n\n' }
 * ```
 */
export function findStopString(
  text: string,
  stops: readonly string[],
  fromIndex = 0,
): StopMatch | undefined {
  let best: StopMatch | undefined;
  for (const stop of stops) {
    const index = text.indexOf(stop, fromIndex);
    if (index < 0) continue;
    if (!best || index < best.index || (index === best.index && stop.length > best.stop.length)) {
      best = { index, stop };
    }
  }
  return best;
}

function commonPrefixLength(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let index = 0;
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index++;
  return index;
}

const given = <T>(expected: string) => custom<T>(() => true, expected);

/**
 * The options of {@link SequenceTracker}, declared once (type, key list, README table). Only the
 * keys are checked (the engine builds them); `maxNewTokens` is required by the type.
 */
export const SEQUENCE_TRACKER_OPTIONS = defineOptions(
  {
    maxNewTokens: optional(given<number>('a token count'), {
      description: 'The sequence finishes with `length` after this many tokens.',
      defaultText: 'required',
    }),
    eosTokenIds: optional(given<ReadonlySet<number>>('a set of token ids'), {
      description:
        'Tokens that finish the sequence with `stop` (kept in `tokenIds`, not in the text).',
      defaultText: 'none',
    }),
    stop: optional(given<readonly string[]>('an array of strings'), {
      description: 'Stop strings, matched on the decoded text (empty strings ignored).',
      defaultText: 'none',
    }),
    decode: optional(given<(tokenIds: number[]) => string>('a function (tokenIds) => text'), {
      description: 'Decodes the tokens so far (needed for the text and stop strings).',
      defaultText: 'no text',
    }),
  },
  { parameter: 'options', functionName: 'SequenceTracker' },
);

/** Options of {@link SequenceTracker} (see {@link SEQUENCE_TRACKER_OPTIONS}). */
export type SequenceTrackerOptions = Omit<
  OptionsInput<typeof SEQUENCE_TRACKER_OPTIONS.schema>,
  'maxNewTokens'
> & { maxNewTokens: number };

/**
 * Tracks one generated sequence: its tokens, behaviour logprobs, decoded text, and when it must
 * stop (EOS, a stop string, `maxNewTokens`).
 *
 * Stop strings are matched on the decoded text, so a stop string split across tokens (or starting
 * inside a token) is found as soon as the token that completes it is generated. The completion then
 * keeps every token up to and including that one (they were sampled and carry logprobs, so the
 * trainer sees exactly what the policy did) and its text is cut just before the stop string. EOS
 * tokens are kept in `tokenIds` too (the policy learns to stop) but do not appear in the text.
 */
export class SequenceTracker {
  readonly tokenIds: number[] = [];
  readonly logprobs: number[] = [];
  readonly modelLogprobs: number[] = [];
  finishReason: FinishReason | undefined;
  /** Decoded text (cut before a matched stop string once finished). */
  text = '';
  private readonly decode: ((tokenIds: number[]) => string) | undefined;
  private readonly stops: readonly string[];
  private readonly maxStopLength: number;
  private readonly eosTokenIds: ReadonlySet<number>;
  private readonly maxNewTokens: number;

  constructor(options: SequenceTrackerOptions) {
    SEQUENCE_TRACKER_OPTIONS.parse(options);
    this.maxNewTokens = options.maxNewTokens;
    this.eosTokenIds = options.eosTokenIds ?? new Set();
    this.stops = (options.stop ?? []).filter((stop) => stop.length > 0);
    this.maxStopLength = Math.max(0, ...this.stops.map((stop) => stop.length));
    this.decode = options.decode;
  }

  get finished(): boolean {
    return this.finishReason !== undefined;
  }

  /** Appends a sampled token and updates the text and `finishReason` (EOS, stop string, length). */
  push(tokenId: number, logprob: number, modelLogprob?: number): void {
    this.tokenIds.push(tokenId);
    this.logprobs.push(logprob);
    if (modelLogprob !== undefined) this.modelLogprobs.push(modelLogprob);
    if (this.eosTokenIds.has(tokenId)) {
      this.finishReason = 'stop';
      return;
    }
    if (this.decode) {
      const previous = this.text;
      const text = this.decode(this.tokenIds);
      this.text = text;
      if (this.stops.length > 0) {
        const stable = commonPrefixLength(previous, text);
        const from = Math.max(0, stable - this.maxStopLength + 1);
        const match = findStopString(text, this.stops, from);
        if (match) {
          this.text = text.slice(0, match.index);
          this.finishReason = 'stop';
          return;
        }
      }
    }
    if (this.tokenIds.length >= this.maxNewTokens) this.finishReason = 'length';
  }

  /** Marks the sequence aborted (if it has not finished already). */
  abort(): void {
    if (!this.finished) this.finishReason = 'abort';
  }
}
