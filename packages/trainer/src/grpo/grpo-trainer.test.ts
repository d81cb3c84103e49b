import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbortedError, ShapeMismatchError } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { runResumeTask } from '../testing/grpo-run.js';
import { makeScripted, scripted } from '../testing/grpo-scripted.js';
import { maxDigitTask } from '../testing/grpo-task.js';
import type { GrpoConfig } from './grpo-config.js';
import type { GrpoMetricRecord } from './grpo-trainer.js';

const task = maxDigitTask();
let root: string;

/** Metrics without the wall-clock ones (the only values allowed to differ between runs). */
function deterministic(line: string) {
  const record = JSON.parse(line) as GrpoMetricRecord;
  const metrics = Object.fromEntries(
    Object.entries(record.metrics).filter(
      ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
    ),
  );
  return { ...record, elapsedMs: 0, metrics };
}

async function readLines(path: string) {
  return (await readFile(path, 'utf8')).split('\n').filter((line) => line.length > 0);
}

const run = runResumeTask;

describe('GrpoTrainer (cpu)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
    root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('should resume exactly after an abort and a crash mid-checkpoint-write', async () => {
    const whole = join(root, 'whole');
    const result = await run(whole);
    expect(result.steps).toBe(4);
    const want = await readLines(join(whole, 'metrics.jsonl'));
    expect(want).toHaveLength(4);
    const first = JSON.parse(want[0]!) as GrpoMetricRecord;
    for (const key of [
      'reward/mean',
      'reward/std',
      'reward/correct/mean',
      'reward/short/std',
      'reward/overlong/mean',
      'frac_reward_zero_std',
      'kl',
      'entropy',
      'clip_ratio/low_mean',
      'clip_ratio/high_mean',
      'clip_ratio/region_mean',
      'completions/mean_length',
      'completions/min_length',
      'completions/max_length',
      'completions/clipped_ratio',
      'mismatch/mean_abs_logprob_diff',
      'mismatch/is_ratio_max',
      'tokens_per_second/rollout',
      'tokens_per_second/train',
      'time/rollout_ms',
      'time/train_ms',
      'time/step_ms',
      'loss',
      'grad_norm',
    ]) {
      expect(Number.isFinite(first.metrics[key]), key).toBe(true);
    }
    // The sampler holds its own copy of the weights, synced each step: the rollout and trainer
    // logprobs agree (same weights, same engine).
    expect(first.metrics['mismatch/max_abs_logprob_diff']).toBeLessThan(1e-4);
    const later = JSON.parse(want[3]!) as GrpoMetricRecord;
    expect(later.metrics['mismatch/max_abs_logprob_diff']).toBeLessThan(1e-4);
    expect(later.metrics.optimizer_step).toBe(8); // μ = 2
    expect(later.metrics.kl).toBeGreaterThan(0);
    const checkpoints = (await readdir(join(whole, 'checkpoints'))).sort();
    expect(checkpoints).toEqual(['step-00000003', 'step-00000004']); // keepLast 2

    // Interrupted: abort after step 2, then a crash while writing step 3's checkpoint (a partial
    // temporary folder and a torn metrics line are left behind).
    const broken = join(root, 'broken');
    await expect(run(broken, { abortAfter: 2 })).rejects.toSatisfy((error) =>
      AbortedError.isInstance(error),
    );
    const { runId } = JSON.parse(
      await readFile(join(broken, 'checkpoints', 'step-00000002', 'state.json'), 'utf8'),
    ) as { runId: string };
    const partial = join(broken, 'checkpoints', `.tmp-${runId}-step-00000003-1-1`);
    await mkdir(join(partial, 'model'), { recursive: true });
    await writeFile(join(partial, 'model', 'x'), 'partial');
    // A file of the user's in checkpoints/ is never touched.
    await writeFile(join(broken, 'checkpoints', 'notes.txt'), 'mine');
    await appendFile(join(broken, 'metrics.jsonl'), '{"step":3,"metr');
    await appendFile(join(broken, 'completions.jsonl'), '{"step":3');
    const resumed = await run(broken, { resume: true });
    expect(resumed.steps).toBe(4);
    const got = await readLines(join(broken, 'metrics.jsonl'));
    expect(got.map(deterministic)).toEqual(want.map(deterministic));
    expect(await readFile(join(broken, 'completions.jsonl'), 'utf8')).toBe(
      await readFile(join(whole, 'completions.jsonl'), 'utf8'),
    );
    expect((await readdir(join(broken, 'checkpoints'))).sort()).toEqual([
      'notes.txt',
      ...checkpoints,
    ]);
  });
});

describe('GrpoTrainer kill and resume (cpu, child process)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  it('should continue exactly after the process is killed at an arbitrary point', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-grpo-kill-'));
    try {
      const whole = join(dir, 'whole');
      await run(whole, { maxSteps: 8 });
      const want = await readLines(join(whole, 'metrics.jsonl'));
      const killed = join(dir, 'killed');
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join('src', 'testing', 'grpo-child.ts'), killed, '8'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += String(chunk);
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      // Kill it (SIGKILL: no cleanup) once it has logged three steps, wherever it is then.
      let lines = 0;
      while (lines < 3 && child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 15));
        lines = (await readLines(join(killed, 'metrics.jsonl')).catch(() => [])).length;
      }
      expect(child.exitCode, stderr).toBeNull();
      child.kill('SIGKILL');
      await exited;
      const resumed = await run(killed, { resume: true, maxSteps: 8 });
      expect(resumed.steps).toBe(8);
      const got = await readLines(join(killed, 'metrics.jsonl'));
      expect(got.map(deterministic)).toEqual(want.map(deterministic));
      expect(await readFile(join(killed, 'completions.jsonl'), 'utf8')).toBe(
        await readFile(join(whole, 'completions.jsonl'), 'utf8'),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GrpoTrainer orchestration (cpu, scripted sampler)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['cpu'] });
  });

  const make = async (
    sampler: MockSampler,
    config: Partial<GrpoConfig> = {},
    extra: { tokenizer?: { encode(text: string): number[] }; rewards?: typeof task.rewards } = {},
  ) => makeScripted(sampler, config, extra);

  it('should regenerate until full within the budget, push weights, and skip empty steps', async () => {
    // Prompts in order a, b | c, a | b, c. Round 1: both groups zero-variance; round 2: one mixed
    // group (a); round 3: two mixed groups (b, c), one more than needed.
    const plan = [
      [
        ['0', '0'],
        ['0', '0'],
      ],
      [
        ['0', '0'],
        ['3', '0'],
      ],
      [
        ['6', '1'],
        ['9', '2'],
      ],
      // Step 2 (budget 3 rounds): never any variance.
      [
        ['0', '0'],
        ['0', '0'],
      ],
      [
        ['0', '0'],
        ['0', '0'],
      ],
      [
        ['0', '0'],
        ['0', '0'],
      ],
    ];
    const sampler = new MockSampler({
      script: (_request, call) => plan[call]!.map((group) => group.map((t) => scripted(t))),
    });
    const { grpo, model, logs } = await make(sampler, { dynamicSampling: { maxRounds: 3 } });
    const first = await grpo.step();
    expect(sampler.sampleCalls).toHaveLength(3);
    expect(sampler.sampleCalls[0]).toMatchObject({
      n: 2,
      maxNewTokens: 4,
      temperature: 1,
    });
    // Behaviour logprobs are `completion.logprobs`; the raw-model ones are not needed.
    expect(sampler.sampleCalls[0]!.returnModelLogprobs).toBeUndefined();
    expect(sampler.sampleCalls[0]!.seed).not.toBe(sampler.sampleCalls[1]!.seed);
    expect(first.metrics['dynamic_sampling/rounds']).toBe(3);
    expect(first.metrics['dynamic_sampling/generated_groups']).toBe(6);
    expect(first.metrics['dynamic_sampling/kept_groups']).toBe(2);
    expect(first.metrics.frac_reward_zero_std).toBeCloseTo(3 / 6, 12);
    expect(first.metrics['tokens/loss']).toBe(4); // 2 kept groups × 2 samples × 1 token
    expect(first.metrics['reward/mean']).toBeCloseTo(3 / 12, 12);
    expect(sampler.weightUpdates.map((snapshot) => snapshot.step)).toEqual([1]);
    const second = await grpo.step();
    expect(second.metrics['dynamic_sampling/kept_groups']).toBe(0);
    expect(second.metrics.optimizer_step).toBe(1);
    expect(second.diagnostics?.join(' ')).toMatch(/no group left/);
    expect(logs.join('\n')).toMatch(/zero reward variance/);
    expect(sampler.weightUpdates).toHaveLength(1);
    grpo.dispose();
    model.dispose();
  });

  it('should count non-finite rewards and over-context completions, and explain loss ≈ 0', async () => {
    const sampler = new MockSampler({
      script: () => [
        [scripted('3'), scripted('1'.repeat(13), { finishReason: 'length' })],
        [scripted('6'), scripted('2')],
      ],
    });
    const { grpo, model } = await make(
      sampler,
      { maxNewTokens: 13 },
      {
        rewards: [
          { name: 'correct', fn: ({ completion, answer }) => (completion === answer ? 1 : 0) },
          { name: 'broken', fn: ({ completion }) => (completion === '2' ? Number.NaN : 0) },
        ],
      },
    );
    const record = await grpo.step();
    expect(record.metrics['skipped/over_context']).toBe(1);
    expect(record.metrics['skipped/non_finite_rewards']).toBe(1);
    expect(record.metrics['reward/broken/null_fraction']).toBe(0.25);
    expect(record.metrics['completions/max_length']).toBe(13);
    expect(record.metrics['completions/clipped_ratio']).toBe(0.25);
    expect(record.metrics['tokens/loss']).toBe(3);
    const text = record.diagnostics!.join('\n');
    expect(text).toMatch(/longer than the context/);
    expect(text).toMatch(/non-finite reward/);
    expect(text).toMatch(/μ = 1 and β = 0/);
    grpo.dispose();
    model.dispose();
  });

  it('should reject bad sampler output, bad options and a foreign output folder', async () => {
    const short = new MockSampler({ script: () => [[scripted('3')], [scripted('6')]] });
    const a = await make(short);
    await expect(a.grpo.step()).rejects.toThrow(ShapeMismatchError);
    const torn = new MockSampler({
      script: () => [
        [{ ...scripted('3'), logprobs: [] }, scripted('1')],
        [scripted('6'), scripted('2')],
      ],
    });
    const b = await make(torn);
    await expect(b.grpo.step()).rejects.toThrow(/one logprob/);
    const noIds = new MockSampler({
      script: () => [
        [{ ...scripted('3'), promptTokenIds: undefined }, scripted('1')],
        [scripted('6'), scripted('2')],
      ],
    });
    const c = await make(noIds);
    await expect(c.grpo.step()).rejects.toThrow(/tokenizer/);
    // a served model's numbers (core: behaviourLogprobs false) and text-only completions
    const served = new MockSampler({
      script: () => [
        [{ ...scripted('3'), behaviourLogprobs: false }, scripted('1')],
        [scripted('6'), scripted('2')],
      ],
    });
    await expect((await make(served)).grpo.step()).rejects.toThrow(/behaviourLogprobs/);
    const textOnly = new MockSampler({
      script: () => [
        [{ ...scripted('3'), tokenIds: [], logprobs: [] }, scripted('1')],
        [scripted('6'), scripted('2')],
      ],
    });
    await expect((await make(textOnly)).grpo.step()).rejects.toThrow(/text-only/);
    const d = await make(noIds, {}, { tokenizer: task.tokenizer });
    await expect(d.grpo.step()).resolves.toMatchObject({ step: 1 });
    await expect(make(short, { groupSize: 1 })).rejects.toThrow(/config\.groupSize/);
    await expect(make(short, { topP: 0 })).rejects.toThrow(/config\.topP/);
    await expect(make(short, {}, { rewards: [{ name: 'overlong', fn: () => 1 }] })).rejects.toThrow(
      /options\.rewards\[0\]/,
    );
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-grpo-dir-'));
    const e = await make(
      new MockSampler({
        script: () => [
          [scripted('3'), scripted('1')],
          [scripted('6'), scripted('2')],
        ],
      }),
      { outputDir: dir, maxSteps: 1 },
    );
    await e.grpo.train();
    await expect(make(short, { outputDir: dir })).rejects.toMatchObject({
      code: 'WOULD_OVERWRITE',
      message: expect.stringMatching(/overwrite: true.*resume: true/),
    });
    await rm(dir, { recursive: true, force: true });
    for (const x of [a, b, c, d, e]) {
      x.grpo.dispose();
      x.model.dispose();
    }
  });
});
