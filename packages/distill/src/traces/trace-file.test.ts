import { appendFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortedError,
  type Completion,
  createRng,
  ErrorCode,
  OverwriteRefusedError,
  ResumeMismatchError,
  type SampleRequest,
} from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { generateTraces } from './generate-traces.js';
import { readTraces, readTracesHeader } from './trace-file.js';

function seededTeacher(finishReason?: (promptIndex: string) => Completion['finishReason']) {
  return new MockSampler({
    script: (request: SampleRequest) =>
      request.prompts.map((prompt) => {
        const rng = createRng(request.seed ?? 0);
        return Array.from({ length: request.n }, () =>
          mockCompletion(`${String(prompt)} => ${rng.nextInt(3)}`, {
            finishReason: finishReason?.(String(prompt)) ?? 'stop',
          }),
        );
      }),
  });
}

const prompts = Array.from({ length: 4 }, (_, i) => ({
  id: `p${i}`,
  prompt: `q${i}`,
  answer: '1',
}));
const reward = ({ completion }: { completion: string }) => (completion.endsWith('=> 1') ? 1 : 0);
const weights = (value: number) => ({
  tensors: [{ name: 'w', shape: [2], data: new Float32Array([value, 1]) }],
});

async function base(overrides: Record<string, unknown> = {}) {
  const outPath = join(await mkdtemp(join(tmpdir(), 'trace-file-')), 'traces.jsonl');
  return {
    sampler: seededTeacher(),
    prompts,
    k: 2,
    sampling: { maxNewTokens: 8, temperature: 1, seed: 3 },
    reward,
    outPath,
    teacher: { weights: weights(0.5) },
    ...overrides,
  };
}

describe('generateTraces options', () => {
  it('should reject unknown and ineffective keys, naming the closest valid one', async () => {
    const options = await base();
    const typo = generateTraces({ ...options, batch_size: 4 } as never);
    await expect(typo).rejects.toMatchObject({ code: ErrorCode.UNKNOWN_OPTION });
    await expect(typo).rejects.toThrow(/did you mean 'batchSize'\?/);
    await expect(
      generateTraces({ ...options, sampling: { maxNewTokens: 8, temprature: 1 } as never }),
    ).rejects.toThrow(/options\.sampling\.temprature.*did you mean 'temperature'\?/);
    await expect(
      generateTraces({ ...options, teacher: { weigths: weights(1) } as never }),
    ).rejects.toThrow(/did you mean 'weights'\?/);
    await expect(
      generateTraces({
        ...options,
        sampling: { maxNewTokens: 8, returnModelLogprobs: true } as never,
      }),
    ).rejects.toMatchObject({ code: ErrorCode.INEFFECTIVE_OPTION });
    await expect(readTraces(options.outPath, { prompt_ids: ['p0'] } as never)).rejects.toThrow(
      /did you mean 'promptIds'\?/,
    );
  });
});

describe('generateTraces abort contract', () => {
  it('should reject with AbortedError on an aborted signal and write no traces', async () => {
    const options = await base();
    const controller = new AbortController();
    controller.abort('stop');
    await expect(generateTraces({ ...options, signal: controller.signal })).rejects.toSatisfy(
      AbortedError.isInstance,
    );
    expect(await readTraces(options.outPath)).toEqual([]);
  });

  it('should write nothing of a batch whose sampler resolved after the signal aborted', async () => {
    const controller = new AbortController();
    const inner = seededTeacher();
    // A sampler that ignores the signal: it aborts it mid-call and still resolves.
    const sampler = new MockSampler({
      script: async (request) => {
        if (request.prompts[0] === 'q2') controller.abort('user');
        return inner.sample(request);
      },
    });
    const options = await base({ sampler, batchSize: 2 });
    await expect(generateTraces({ ...options, signal: controller.signal })).rejects.toSatisfy(
      AbortedError.isInstance,
    );
    const records = await readTraces(options.outPath);
    expect([...new Set(records.map((record) => record.promptId))]).toEqual(['p0', 'p1']);
  });

  it('should never save a group with an aborted completion, and sample it again on resume', async () => {
    const options = await base({ sampler: seededTeacher((p) => (p === 'q1' ? 'abort' : 'stop')) });
    const result = await generateTraces(options);
    expect(result).toMatchObject({ generatedPrompts: 3, abortedPrompts: 1, traces: 6 });
    const records = await readTraces(options.outPath);
    expect(records.some((record) => record.finishReason === 'abort')).toBe(false);
    expect(records.some((record) => record.promptId === 'p1')).toBe(false);
    const resumed = await generateTraces({ ...options, sampler: seededTeacher() });
    expect(resumed).toMatchObject({ resumedPrompts: 3, generatedPrompts: 1, abortedPrompts: 0 });
    expect(await readTraces(options.outPath)).toHaveLength(8);
  });
});

describe('generateTraces fingerprint', () => {
  it('should refuse to resume a file written by another teacher, leaving it untouched', async () => {
    const options = await base();
    const first = await generateTraces(options);
    const before = await readFile(options.outPath, 'utf8');
    const header = await readTracesHeader(options.outPath);
    expect(header).toMatchObject({ type: 'header', fingerprint: first.fingerprint });
    expect(before.split('\n')[0]).toBe(JSON.stringify(header));

    const other = generateTraces({ ...options, teacher: { weights: weights(0.25) } });
    await expect(other).rejects.toSatisfy(ResumeMismatchError.isInstance);
    await expect(other).rejects.toThrow(/teacher\.weightsHash/);
    await expect(
      generateTraces({ ...options, sampling: { ...options.sampling, temperature: 0.7 } }),
    ).rejects.toThrow(/sampling\.temperature/);
    await expect(generateTraces({ ...options, k: 3 })).rejects.toThrow(/'k' was 2, now 3/);
    expect(await readFile(options.outPath, 'utf8')).toBe(before);

    // The same teacher and settings resume: nothing is sampled again.
    const sampler = seededTeacher();
    const again = await generateTraces({ ...options, sampler });
    expect(again).toMatchObject({ resumedPrompts: 4, generatedPrompts: 0 });
    expect(sampler.sampleCalls).toHaveLength(0);
    expect(await readTraces(options.outPath, { fingerprint: first.fingerprint })).toHaveLength(8);
    await expect(
      readTraces(options.outPath, { fingerprint: 'ffffffffffffffff' }),
    ).rejects.toSatisfy(ResumeMismatchError.isInstance);

    // overwrite: true starts a new file with the new teacher's traces only.
    const replaced = await generateTraces({
      ...options,
      teacher: { weights: weights(0.25) },
      overwrite: true,
    });
    expect(replaced.fingerprint).not.toBe(first.fingerprint);
    expect(replaced).toMatchObject({ resumedPrompts: 0, generatedPrompts: 4 });
    expect(await readTracesHeader(options.outPath)).toMatchObject({
      fingerprint: replaced.fingerprint,
    });
    expect(await readTraces(options.outPath)).toHaveLength(8);
  });

  it('should refuse to resume a file without a header (written before fingerprints)', async () => {
    const options = await base();
    await generateTraces(options);
    const lines = (await readFile(options.outPath, 'utf8')).split('\n');
    const legacy = `${lines.slice(1).join('\n')}`;
    await writeFile(options.outPath, legacy);
    await expect(generateTraces(options)).rejects.toThrow(/'header' was/);
    expect(await readFile(options.outPath, 'utf8')).toBe(legacy);
    // Still readable, as before.
    expect(await readTraces(options.outPath)).toHaveLength(8);
  });

  it('should read and resume only the requested prompt ids', async () => {
    const options = await base();
    await generateTraces(options);
    expect(
      (await readTraces(options.outPath, { promptIds: ['p1', 'p3'] })).map((r) => r.promptId),
    ).toEqual(['p1', 'p1', 'p3', 'p3']);
    const sampler = seededTeacher();
    const more = [...prompts.slice(2), { id: 'p9', prompt: 'q9', answer: '1' }];
    const result = await generateTraces({ ...options, sampler, prompts: more });
    expect(result).toMatchObject({ resumedPrompts: 2, generatedPrompts: 1 });
    expect(sampler.sampleCalls.map((call) => call.prompts[0])).toEqual(['q9']);
  });
});

describe('generateTraces never destroys what it did not write', () => {
  it('should refuse resume: false on a non-empty file unless overwrite: true', async () => {
    const options = await base();
    await generateTraces(options);
    const before = await readFile(options.outPath, 'utf8');
    const refused = generateTraces({ ...options, resume: false });
    await expect(refused).rejects.toSatisfy(OverwriteRefusedError.isInstance);
    await expect(refused).rejects.toThrow(/overwrite: true/);
    expect(await readFile(options.outPath, 'utf8')).toBe(before);
    const fresh = await generateTraces({ ...options, resume: false, overwrite: true });
    expect(fresh).toMatchObject({ resumedPrompts: 0, generatedPrompts: 4 });
  });

  it('should keep the bytes of a crashed file and append after them on resume', async () => {
    const options = await base();
    await generateTraces(options);
    const lines = (await readFile(options.outPath, 'utf8')).trim().split('\n');
    // Header, p0 complete, one trace of p1, then a torn line.
    const crashed = `${lines.slice(0, 4).join('\n')}\n{"promptId": "p2", "comp`;
    await writeFile(options.outPath, crashed);
    const result = await generateTraces(options);
    expect(result).toMatchObject({ resumedPrompts: 1, generatedPrompts: 3 });
    expect((await readFile(options.outPath, 'utf8')).startsWith(crashed)).toBe(true);
    const records = await readTraces(options.outPath);
    expect(records).toHaveLength(8);
    expect(new Set(records.map((r) => `${r.promptId}/${r.sampleIndex}`)).size).toBe(8);
  });

  it('should refuse a folder as outPath', async () => {
    const options = await base();
    await appendFile(options.outPath, '');
    await expect(
      generateTraces({ ...options, outPath: join(options.outPath, '..') }),
    ).rejects.toSatisfy(OverwriteRefusedError.isInstance);
  });
});
