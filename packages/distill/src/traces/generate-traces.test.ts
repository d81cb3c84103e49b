import { appendFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng, type SampleRequest } from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { generateTraces } from './generate-traces.js';
import { readTraces } from './trace-file.js';

/** A deterministic "teacher": answers depend only on the request's seed. */
function seededTeacher() {
  return new MockSampler({
    script: (request: SampleRequest) =>
      request.prompts.map((prompt) => {
        const rng = createRng(request.seed ?? 0);
        return Array.from({ length: request.n }, () =>
          mockCompletion(`${String(prompt)} => ${rng.nextInt(3)}`),
        );
      }),
  });
}

const prompts = Array.from({ length: 5 }, (_, i) => ({
  id: `p${i}`,
  prompt: `q${i}`,
  answer: '1',
}));
const reward = ({ completion, answer }: { completion: string; answer?: unknown }) =>
  completion.endsWith(`=> ${answer}`) ? 1 : completion.endsWith('=> 2') ? null : 0;

describe('generateTraces', () => {
  it('should write k scored traces per prompt and count accepted ones', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'traces-'));
    const outPath = join(dir, 'nested', 'traces.jsonl');
    const sampler = seededTeacher();
    const result = await generateTraces({
      sampler,
      prompts,
      k: 4,
      sampling: { maxNewTokens: 8, seed: 7 },
      reward,
      outPath,
      batchSize: 2,
      keepLogprobs: true,
    });
    const records = await readTraces(outPath);
    expect(records).toHaveLength(20);
    expect(result).toMatchObject({ resumedPrompts: 0, generatedPrompts: 5, traces: 20 });
    expect(result.accepted).toBe(records.filter((r) => r.accepted).length);
    for (const record of records) {
      expect(record.accepted).toBe(record.reward === 1);
      expect(record.logprobs).toHaveLength(record.tokenIds.length);
      if (record.completion.endsWith('=> 2')) expect(record.reward).toBeNull();
    }
    expect(sampler.sampleCalls.every((call) => call.n === 4 && call.prompts.length === 1)).toBe(
      true,
    );
  });

  it('should resume after a crash and end with the same file as an uninterrupted run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'traces-'));
    const full = join(dir, 'full.jsonl');
    await generateTraces({
      sampler: seededTeacher(),
      prompts,
      k: 3,
      sampling: { maxNewTokens: 8, seed: 1 },
      reward,
      outPath: full,
    });
    const fullRecords = await readTraces(full);

    // Simulate a crash: the first two prompts complete, a third partially written, a torn line.
    const crashed = join(dir, 'crashed.jsonl');
    const lines = (await readFile(full, 'utf8')).trim().split('\n');
    await writeFile(crashed, `${lines.slice(0, 7).join('\n')}\n`);
    await appendFile(crashed, '{"promptId": "p2", "comp');
    const sampler = seededTeacher();
    const result = await generateTraces({
      sampler,
      prompts,
      k: 3,
      sampling: { maxNewTokens: 8, seed: 1 },
      reward,
      outPath: crashed,
    });
    expect(result.resumedPrompts).toBe(2);
    expect(result.generatedPrompts).toBe(3);
    expect(sampler.sampleCalls.map((call) => call.prompts[0])).toEqual(['q2', 'q3', 'q4']);
    const resumed = await readTraces(crashed);
    const key = (r: { promptId: string; sampleIndex: number }) => `${r.promptId}/${r.sampleIndex}`;
    expect([...resumed].sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
      [...fullRecords].sort((a, b) => key(a).localeCompare(key(b))),
    );
  });

  it('should reject bad options naming the parameter', async () => {
    const base = {
      sampler: seededTeacher(),
      prompts,
      k: 2,
      sampling: { maxNewTokens: 4 },
      reward,
      outPath: join(tmpdir(), 'x.jsonl'),
    };
    await expect(generateTraces({ ...base, k: 0 })).rejects.toThrow(/options.k/);
    await expect(
      generateTraces({
        ...base,
        prompts: [
          { id: 'a', prompt: 'x' },
          { id: 'a', prompt: 'y' },
        ],
      }),
    ).rejects.toThrow(/options.prompts\[1\].id/);
    await expect(generateTraces({ ...base, reward: 'x' as never })).rejects.toThrow(
      /options.reward/,
    );
    await expect(
      generateTraces({
        ...base,
        reward: () => Number.NaN,
        outPath: join(tmpdir(), `nan-${Date.now()}.jsonl`),
      }),
    ).rejects.toThrow(/options.reward/);
  });
});
