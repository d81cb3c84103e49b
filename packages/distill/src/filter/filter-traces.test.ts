import { describe, expect, it } from 'vitest';
import type { TraceRecord } from '../traces/trace-record.js';
import { filterTraces } from './filter-traces.js';

function trace(
  promptId: string,
  sampleIndex: number,
  completion: string,
  accepted: boolean,
  extra: Partial<TraceRecord> = {},
): TraceRecord {
  return {
    promptId,
    prompt: promptId,
    sampleIndex,
    completion,
    tokenIds: completion.split(' ').map((_, i) => i),
    finishReason: 'stop',
    reward: accepted ? 1 : 0,
    accepted,
    ...extra,
  };
}

describe('filterTraces', () => {
  const traces = [
    trace('a', 0, 'one two three four five six', true),
    trace('a', 1, 'one two', true),
    trace('a', 2, 'wrong answer here', false),
    trace('a', 3, 'one two three four five six', true), // exact duplicate of 0
    trace('a', 4, 'alpha beta gamma delta', true, { finishReason: 'length' }),
    trace('b', 0, 'nope', false),
    trace('b', 1, 'nope again', false),
    trace('c', 0, 'x y z w v u t s r q', true),
  ];

  it('should keep accepted, non-truncated, non-duplicate traces, shortest first, within the quota', () => {
    const { kept, report } = filterTraces(traces, { maxPerPrompt: 1 });
    expect(kept.map((t) => `${t.promptId}${t.sampleIndex}`)).toEqual(['a1', 'c0']);
    expect(report.discarded).toEqual({
      rejected: 3,
      truncated: 1,
      tooLong: 0,
      duplicate: 1,
      overQuota: 1,
    });
    expect(report).toMatchObject({
      prompts: 3,
      promptsWithAccepted: 2,
      total: 8,
      accepted: 5,
      kept: 2,
    });
    expect(report.perPrompt.find((p) => p.promptId === 'a')).toEqual({
      promptId: 'a',
      total: 5,
      accepted: 4,
      kept: 1,
      passRate: 0.8,
    });
    expect(report.meanPassRate).toBeCloseTo((0.8 + 0 + 1) / 3, 14);
    // Every trace is accounted for exactly once.
    const d = report.discarded;
    expect(report.kept + d.rejected + d.truncated + d.tooLong + d.duplicate + d.overQuota).toBe(
      report.total,
    );
  });

  it('should honour maxTokens, dedupe off, truncated kept, and the first/random preferences', () => {
    const noDedupe = filterTraces(traces, {
      dedupeThreshold: false,
      dropTruncated: false,
      maxTokens: 6,
      prefer: 'first',
    });
    expect(noDedupe.kept.map((t) => `${t.promptId}${t.sampleIndex}`)).toEqual([
      'a0',
      'a1',
      'a3',
      'a4',
    ]);
    expect(noDedupe.report.discarded.tooLong).toBe(1);
    const random1 = filterTraces(traces, { prefer: 'random', seed: 1, maxPerPrompt: 1 });
    const random2 = filterTraces(traces, { prefer: 'random', seed: 1, maxPerPrompt: 1 });
    expect(random1.kept).toEqual(random2.kept);
  });

  it('should drop near-duplicates by word-trigram Jaccard similarity', () => {
    const near = [
      trace('p', 0, 'we add 3 and 4 to get 7 so the answer is 7', true),
      trace('p', 1, 'we add 3 and 4 to get 7 so the answer is 7 .', true),
      trace('p', 2, 'three plus four equals seven', true),
    ];
    expect(
      filterTraces(near, { prefer: 'first', dedupeThreshold: 0.8 }).kept.map((t) => t.sampleIndex),
    ).toEqual([0, 2]);
    expect(filterTraces(near, { prefer: 'first', dedupeThreshold: 1 }).kept).toHaveLength(3);
  });

  it('should reject bad input naming the parameter', () => {
    expect(() => filterTraces([{} as TraceRecord])).toThrow(/traces\[0\]/);
    expect(() => filterTraces(traces, { maxPerPrompt: 0 })).toThrow(/options.maxPerPrompt/);
    expect(() => filterTraces(traces, { prefer: 'longest' as 'first' })).toThrow(/options.prefer/);
    expect(() => filterTraces(traces, { dedupeThreshold: 0 })).toThrow(/options.dedupeThreshold/);
  });

  it('should reject unknown and ineffective options naming the closest valid one', () => {
    expect(() => filterTraces([], { max_per_prompt: 2 } as never)).toThrow(
      /'options\.max_per_prompt'.*did you mean 'maxPerPrompt'\?/,
    );
    expect(() => filterTraces([], { dedupe: 0.5 } as never)).toThrow(/UNKNOWN|did you mean/);
    expect(() => filterTraces([], { seed: 3 })).toThrow(/options\.seed.*no effect/);
    expect(filterTraces([], { seed: 3, prefer: 'random' }).kept).toEqual([]);
  });
});
