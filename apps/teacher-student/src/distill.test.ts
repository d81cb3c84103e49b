import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTracesHeader } from '@rlvr/distill';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, mergeConfig, type RunConfig } from './config.js';
import { teacherTraces } from './distill.js';
import { randomCheckpoint } from './models.js';
import { createRuntime, type Runtime } from './runtime.js';
import { buildTaskTokenizer, makeSplits } from './task.js';

describe('the distillation never reuses traces of another teacher', () => {
  let outDir: string;
  let runtime: Runtime;
  const config: RunConfig = mergeConfig(structuredClone(DEFAULT_CONFIG), {
    maxNewTokens: 8,
    distill: { prompts: 3, tracesPerPrompt: 2 },
    workers: 0,
  });
  const tokenizerFiles = buildTaskTokenizer();
  const size = { hiddenSize: 16, layers: 1, heads: 2, kvHeads: 1, intermediateSize: 16 };
  const teacherA = randomCheckpoint(size, tokenizerFiles, { seed: 1, maxPositions: 64 });
  const teacherB = randomCheckpoint(size, tokenizerFiles, { seed: 2, maxPositions: 64 });
  const problems = makeSplits(config.task, { train: 3, eval: 1, seed: 1 }).train;
  const options = () => ({ problems, progressMode: 'silent' as const, log: () => {} });

  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'rlvr-teacher-student-traces-'));
    runtime = await createRuntime(config);
  });
  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('moves a stale traces.jsonl aside untouched, regenerates, and reuses only a matching file', async () => {
    const path = join(outDir, 'traces.jsonl');
    const a = await teacherTraces(config, runtime, outDir, teacherA, options());
    expect(a.resumedPrompts).toBe(0);
    expect(a.traces).toHaveLength(3 * 2);
    const bytesOfA = await readFile(path, 'utf8');

    // Another teacher (the RL phase re-ran): the old file used to be resumed by prompt id.
    const b = await teacherTraces(config, runtime, outDir, teacherB, options());
    expect(b.fingerprint).not.toBe(a.fingerprint);
    expect(b.resumedPrompts).toBe(0);
    expect((await readTracesHeader(path))?.fingerprint).toBe(b.fingerprint);
    const stale = (await readdir(outDir)).filter((name) => name.startsWith('traces.stale-'));
    expect(stale).toEqual([`traces.stale-${a.fingerprint}.jsonl`]);
    expect(await readFile(join(outDir, stale[0]!), 'utf8')).toBe(bytesOfA);

    // The same teacher again: every prompt is reused, same traces.
    const again = await teacherTraces(config, runtime, outDir, teacherB, options());
    expect(again.resumedPrompts).toBe(3);
    expect(again.traces).toEqual(b.traces);
  });
});
