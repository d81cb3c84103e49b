import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OverwriteRefusedError, ResumeMismatchError } from '@rlvr/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { ANSWER_RECORDS, constantSampler, makeScripted } from '../testing/grpo-scripted.js';
import type { GrpoConfig } from './grpo-config.js';

let root: string;
let count = 0;

beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-files-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function folder(): string {
  count += 1;
  return join(root, `run-${count}`);
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Trains `maxSteps` scripted steps in `outputDir` (checkpoint every step). */
async function trainIn(
  outputDir: string,
  config: Partial<GrpoConfig> = {},
  extra: Parameters<typeof makeScripted>[2] = {},
) {
  const made = await makeScripted(
    constantSampler(['3', '1']),
    { outputDir, saveEvery: 1, ...config },
    extra,
  );
  try {
    return { ...(await made.grpo.train()), runId: made.grpo.runId, logs: made.logs };
  } finally {
    made.dispose();
  }
}

const refused = (error: unknown) => OverwriteRefusedError.isInstance(error);

describe('GrpoTrainer run folder: nothing is destroyed without being asked (point 3)', () => {
  it('should refuse a fresh start over a previous run, and with overwrite remove only its files', async () => {
    const dir = folder();
    await trainIn(dir);
    await writeFile(join(dir, 'notes.txt'), 'mine');
    await writeFile(join(dir, 'checkpoints', 'mine.txt'), 'mine');
    const metrics = await readFile(join(dir, 'metrics.jsonl'), 'utf8');
    for (const resume of [undefined, false]) {
      await expect(
        makeScripted(constantSampler(['3', '1']), { outputDir: dir }, { resume }),
      ).rejects.toSatisfy(refused);
    }
    expect(await readFile(join(dir, 'metrics.jsonl'), 'utf8')).toBe(metrics);
    expect((await readdir(join(dir, 'checkpoints'))).sort()).toEqual([
      'mine.txt',
      'step-00000001',
      'step-00000002',
    ]);
    const fresh = await makeScripted(
      constantSampler(['3', '1']),
      { outputDir: dir },
      { overwrite: true },
    );
    expect(await exists(join(dir, 'metrics.jsonl'))).toBe(false);
    expect(await readdir(join(dir, 'checkpoints'))).toEqual(['mine.txt']);
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    await fresh.grpo.train();
    fresh.dispose();
    const lines = (await readFile(join(dir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).step)).toEqual([1, 2]);
  });

  it('should prune only checkpoints of this run', async () => {
    const other = folder();
    await trainIn(other, { maxSteps: 5, keepLast: 1 });
    const dir = folder();
    const first = await trainIn(dir, { maxSteps: 2, keepLast: 1 });
    // A checkpoint of another run (a later step) lands in this run's folder.
    await cp(
      join(other, 'checkpoints', 'step-00000005'),
      join(dir, 'checkpoints', 'step-00000005'),
      {
        recursive: true,
      },
    );
    const resumed = await trainIn(
      dir,
      { maxSteps: 4, keepLast: 1 },
      { resume: join(dir, 'checkpoints', 'step-00000002') },
    );
    expect(resumed.runId).toBe(first.runId);
    // keepLast 1 keeps this run's newest; the other run's (newer) checkpoint is not this run's.
    expect((await readdir(join(dir, 'checkpoints'))).sort()).toEqual([
      'step-00000004',
      'step-00000005',
    ]);
    const foreign = JSON.parse(
      await readFile(join(dir, 'checkpoints', 'step-00000005', 'state.json'), 'utf8'),
    ) as { runId: string };
    expect(foreign.runId).not.toBe(first.runId);
  });

  it('should start fresh with resume: true only in a folder without run files', async () => {
    const dir = folder();
    const { steps } = await trainIn(dir, { maxSteps: 1 }, { resume: true });
    expect(steps).toBe(1);
    const logsOnly = folder();
    await mkdir(logsOnly);
    await writeFile(join(logsOnly, 'metrics.jsonl'), '{"step":1,"metrics":{}}\n');
    await expect(
      makeScripted(constantSampler(['3', '1']), { outputDir: logsOnly }, { resume: true }),
    ).rejects.toSatisfy(refused);
  });

  it('should reject resume from a path that is not a checkpoint, writing nothing', async () => {
    const dir = folder();
    const notCheckpoint = folder();
    await mkdir(notCheckpoint);
    await expect(
      makeScripted(constantSampler(['3', '1']), { outputDir: dir }, { resume: notCheckpoint }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', parameter: 'options.resume' });
    expect(await exists(dir)).toBe(false);
  });

  it('should validate every setting before creating any file', async () => {
    const dir = folder();
    // Valid alone, invalid together: δ must exceed 1 + ε_high (checked by the policy trainer).
    await expect(
      makeScripted(constantSampler(['3', '1']), { outputDir: dir, epsilonHigh: 0.28, delta: 1.1 }),
    ).rejects.toMatchObject({ parameter: 'config.delta' });
    await expect(
      makeScripted(
        constantSampler(['3', '1']),
        { outputDir: dir },
        {
          dataset: [{ id: 'a', prompt: '' }],
        },
      ),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await exists(dir)).toBe(false);
  });
});

describe('GrpoTrainer resume: settings fingerprint (point 7)', () => {
  it('should refuse changed settings, naming them, unless acceptConfigChanges', async () => {
    const dir = folder();
    await trainIn(dir, { maxSteps: 1 });
    const resume = (config: Partial<GrpoConfig>, extra = {}) =>
      makeScripted(
        constantSampler(['3', '1', '0', '2']),
        { outputDir: dir, ...config },
        {
          resume: true,
          ...extra,
        },
      );
    const mismatch = (fields: string[]) => (error: unknown) =>
      ResumeMismatchError.isInstance(error) &&
      fields.every((field) => error.fields.includes(field)) &&
      error.message.includes('acceptConfigChanges: true');
    await expect(resume({ groupSize: 4 })).rejects.toSatisfy(mismatch(['groupSize']));
    await expect(resume({ temperature: 0.9, schedule: { learningRate: 1e-4 } })).rejects.toSatisfy(
      mismatch(['temperature', 'schedule.learningRate']),
    );
    await expect(resume({}, { dataset: ANSWER_RECORDS.slice(0, 2) })).rejects.toSatisfy(
      mismatch(['dataset', 'datasetSize']),
    );
    // Extending a run is normal: maxSteps is not part of the fingerprint.
    const longer = await resume({ maxSteps: 2 });
    expect(longer.grpo.completedSteps).toBe(1);
    longer.dispose();
    const accepted = await resume({ groupSize: 4, maxSteps: 2 }, { acceptConfigChanges: true });
    expect(accepted.logs.join('\n')).toMatch(/changed setting 'groupSize': 2 → 4/);
    const record = await accepted.grpo.step();
    expect(record.step).toBe(2);
    accepted.dispose();
  });

  it('should checkpoint at least every 10% of maxSteps by default', async () => {
    const dir = folder();
    const made = await makeScripted(constantSampler(['3', '1']), { outputDir: dir, maxSteps: 20 });
    expect(made.grpo.config.saveEvery).toBe(2);
    await made.grpo.step();
    await made.grpo.step();
    made.dispose();
    expect(await readdir(join(dir, 'checkpoints'))).toEqual(['step-00000002']);
  });
});
