import { describe, expect, it } from 'vitest';
import { findStopString, SequenceTracker } from './stopping-criteria.js';

/** A toy vocabulary with multi-character pieces, so stop strings can straddle tokens. */
const pieces = ['a', 'b\n', '\nc', 'x\n\n', 'END', 'E', 'ND', '!', 'é'];
const decode = (ids: number[]) => ids.map((id) => pieces[id]).join('');

function track(ids: number[], options: { stop?: string[]; maxNewTokens?: number; eos?: number[] }) {
  const tracker = new SequenceTracker({
    maxNewTokens: options.maxNewTokens ?? 100,
    stop: options.stop,
    eosTokenIds: new Set(options.eos ?? []),
    decode,
  });
  for (const id of ids) {
    if (tracker.finished) break;
    tracker.push(id, -1);
  }
  return tracker;
}

describe('findStopString', () => {
  it('should return the earliest (then longest) match at or after fromIndex', () => {
    expect(findStopString('x = 1\n\ny', ['\n\n'])).toEqual({ index: 5, stop: '\n\n' });
    expect(findStopString('abcabc', ['c', 'bc'])).toEqual({ index: 1, stop: 'bc' });
    expect(findStopString('abcabc', ['c'], 3)).toEqual({ index: 5, stop: 'c' });
    expect(findStopString('abc', ['z'])).toBeUndefined();
  });
});

describe('SequenceTracker', () => {
  it('should cut a stop string that spans two tokens', () => {
    const tracker = track([0, 1, 2, 0], { stop: ['\n\n'] });
    expect(tracker.tokenIds).toEqual([0, 1, 2]); // stops at the token completing the match
    expect(tracker.text).toBe('ab');
    expect(tracker.finishReason).toBe('stop');
    expect(tracker.logprobs).toHaveLength(3);
  });

  it('should cut a stop string inside one token and across three tokens', () => {
    expect(track([0, 3, 0], { stop: ['\n\n'] }).text).toBe('ax');
    const split = track([0, 5, 6, 0], { stop: ['aEND'] });
    expect(split.tokenIds).toEqual([0, 5, 6]);
    expect(split.text).toBe('');
    expect(track([7, 5, 6, 0], { stop: ['END'] }).text).toBe('!');
  });

  it('should pick the earliest of several stop strings', () => {
    const tracker = track([0, 4, 1, 2], { stop: ['\n\n', 'N'] });
    expect(tracker.text).toBe('aE');
    expect(tracker.tokenIds).toEqual([0, 4]);
  });

  it('should stop on EOS, keeping the token but not its text', () => {
    const tracker = track([0, 8, 4, 0], { eos: [4] });
    expect(tracker.tokenIds).toEqual([0, 8, 4]);
    expect(tracker.text).toBe('aé');
    expect(tracker.finishReason).toBe('stop');
  });

  it('should finish with length at maxNewTokens and honour abort', () => {
    const tracker = track([0, 0, 0, 0], { maxNewTokens: 3 });
    expect(tracker.tokenIds).toEqual([0, 0, 0]);
    expect(tracker.finishReason).toBe('length');
    tracker.abort();
    expect(tracker.finishReason).toBe('length');
    const open = track([0], {});
    open.abort();
    expect(open.finishReason).toBe('abort');
  });

  it('should prefer stop over length on the last token', () => {
    const tracker = track([0, 1, 2], { stop: ['\n\n'], maxNewTokens: 3 });
    expect(tracker.finishReason).toBe('stop');
  });
});
