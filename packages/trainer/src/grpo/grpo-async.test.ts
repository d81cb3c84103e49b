import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbortedError, type Completion, InvalidArgumentError } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { makeScripted, scripted } from '../testing/grpo-scripted.js';
import type { GrpoConfig } from './grpo-config.js';
import type { GrpoMetricRecord } from './grpo-trainer.js';

let root: string;
beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-async-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const MISMATCH: GrpoConfig['mismatch'] = { mode: 'token-truncate', cap: 2 };

/** A sampler that records `sample:<n>` / `update:<step>` events; each call resolves after `delayMs`. */
function recordingSampler(
  options: { delayMs?: number; version?: number; hook?: (call: number) => void } = {},
) {
  const events: string[] = [];
  let calls = 0;
  let active = 0;
  let maxActive = 0;
  const completion = (text: string): Completion => ({
    ...scripted(text),
    ...(options.version === undefined ? {} : { policyVersion: options.version }),
  });
  const sampler = new MockSampler({
    script: async (request) => {
      calls += 1;
      events.push(`sample:${calls}`);
      options.hook?.(calls);
      active += 1;
      maxActive = Math.max(maxActive, active);
      await new Promise((resolve) => setTimeout(resolve, options.delayMs ?? 1));
      active -= 1;
      return request.prompts.map(() => [completion('3'), completion('1')]);
    },
  });
  const update = sampler.updateWeights.bind(sampler);
  sampler.updateWeights = async (snapshot) => {
    events.push(`update:${snapshot.step}`);
    await update(snapshot);
  };
  return { sampler, events, maxActive: () => maxActive };
}

function withoutTimes(record: GrpoMetricRecord): Record<string, number> {
  return Object.fromEntries(
    Object.entries(record.metrics).filter(
      ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
    ),
  );
}

async function runSteps(
  config: Partial<GrpoConfig>,
  sampler = recordingSampler(),
  extra: { resume?: boolean } = {},
) {
  const { grpo, model, dispose } = await makeScripted(sampler.sampler, config, extra);
  const records: GrpoMetricRecord[] = [];
  while (grpo.completedSteps < (config.maxSteps ?? 2)) records.push(await grpo.step());
  const weights = await Promise.all(model.toWeightSnapshot(0).tensors.map((t) => t.data));
  dispose();
  return { records, weights, sampler };
}

describe('GrpoTrainer: asynchronous GRPO (maxStaleness)', () => {
  it('should run maxStaleness 0 exactly as a run without the option', async () => {
    const base = await runSteps({ maxSteps: 3, mismatch: MISMATCH });
    const zero = await runSteps({ maxSteps: 3, mismatch: MISMATCH, maxStaleness: 0 });
    expect(zero.records.map(withoutTimes)).toEqual(base.records.map(withoutTimes));
    expect(Object.keys(zero.records[0]!.metrics).some((key) => key.startsWith('async/'))).toBe(
      false,
    );
    expect(zero.weights).toEqual(base.weights);
    expect(zero.sampler.sampler.sampleCalls).toEqual(base.sampler.sampler.sampleCalls);
    expect(zero.sampler.events).toEqual(base.sampler.events);
  });

  it('should issue the next request before the update, bound in-flight work and tag staleness', async () => {
    const sync = await runSteps({ maxSteps: 3, mismatch: MISMATCH });
    const run = await runSteps(
      { maxSteps: 3, mismatch: MISMATCH, maxStaleness: 1 },
      recordingSampler({ delayMs: 5 }),
    );
    // Step 2's request goes out before step 1's update is pushed; never past maxSteps.
    expect(run.sampler.events).toEqual([
      'sample:1',
      'sample:2',
      'update:1',
      'sample:3',
      'update:2',
      'update:3',
    ]);
    expect(run.sampler.maxActive()).toBeLessThanOrEqual(2);
    // The same prompts and seeds as the synchronous run, in the same order.
    expect(run.sampler.sampler.sampleCalls).toEqual(sync.sampler.sampler.sampleCalls);
    const staleness = run.records.map((r) => [
      r.metrics['async/staleness_mean'],
      r.metrics['async/staleness_max'],
      r.metrics['async/dropped_stale_groups'],
    ]);
    expect(staleness).toEqual([
      [0, 0, 0],
      [1, 1, 0],
      [1, 1, 0],
    ]);
  });

  it('should drop and count a group older than maxStaleness', async () => {
    // Completions that report the weights of version 0 (a worker that never reloaded).
    const run = await runSteps(
      { maxSteps: 3, mismatch: MISMATCH, maxStaleness: 1 },
      recordingSampler({ version: 0 }),
    );
    const at = (step: number, key: string) => run.records[step - 1]!.metrics[key];
    expect(at(2, 'async/dropped_stale_groups')).toBe(0);
    expect(at(2, 'async/staleness_max')).toBe(1);
    expect(at(3, 'async/dropped_stale_groups')).toBe(2); // current version 2, group version 0
    expect(at(3, 'dynamic_sampling/kept_groups')).toBe(0);
    expect(run.records[2]!.diagnostics!.join('\n')).toMatch(/no group left to train on/);
  });

  it('should date a reported policyVersion by the weight pushes, not by optimizer steps', async () => {
    // Like a queue worker: each completion reports the snapshot step of the weights it holds.
    let held = 0;
    let calls = 0;
    const sampler = new MockSampler({
      script: (request) => {
        calls += 1;
        const policyVersion = held;
        // call 1's groups are aborted: step 1 has nothing to train on and pushes no weights
        const finishReason = calls === 1 ? ('abort' as const) : ('stop' as const);
        return request.prompts.map(() =>
          ['3', '1'].map((text) => ({ ...scripted(text, { finishReason }), policyVersion })),
        );
      },
    });
    const update = sampler.updateWeights.bind(sampler);
    sampler.updateWeights = async (snapshot) => {
      held = snapshot.step;
      await update(snapshot);
    };
    const run = await runSteps(
      { maxSteps: 3, mismatch: MISMATCH, maxStaleness: 1 },
      { sampler, events: [], maxActive: () => 0 },
    );
    const at = (step: number, key: string) => run.records[step - 1]!.metrics[key];
    expect(at(1, 'optimizer_step')).toBe(0);
    // Step 3's request went out during step 2, when the weights of snapshot 0 were still
    // current (version 1): staleness 1, kept. Read as "version 0" it would be 2, and dropped.
    expect(at(3, 'async/dropped_stale_groups')).toBe(0);
    expect(at(3, 'async/staleness_max')).toBe(1);
    expect(at(3, 'dynamic_sampling/kept_groups')).toBe(2);
  });

  it('should leave no trace of an aborted step and repeat the same requests', async () => {
    const outputDir = join(root, 'aborted');
    const controller = new AbortController();
    const recording = recordingSampler({
      delayMs: 5,
      hook: (call) => {
        if (call === 3) controller.abort('stop'); // during step 2 (its top-up request)
      },
    });
    const config = { maxSteps: 3, mismatch: MISMATCH, maxStaleness: 1, outputDir, saveEvery: 1 };
    const { grpo, dispose } = await makeScripted(recording.sampler, config);
    await grpo.step({ signal: controller.signal });
    await expect(grpo.step({ signal: controller.signal })).rejects.toSatisfy((error) =>
      AbortedError.isInstance(error),
    );
    expect(grpo.completedSteps).toBe(1);
    const steps = async () =>
      (await readFile(join(outputDir, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).step);
    expect(await steps()).toEqual([1]);
    expect(recording.events.filter((e) => e.startsWith('update'))).toEqual(['update:1']);
    const calls = recording.sampler.sampleCalls;
    expect(calls).toHaveLength(3);
    // The retry re-issues steps 2 and 3 with the same prompts and seeds.
    await grpo.step();
    await grpo.step();
    expect(calls).toHaveLength(5);
    expect(calls[3]).toEqual(calls[1]);
    expect(calls[4]).toEqual(calls[2]);
    expect(await steps()).toEqual([1, 2, 3]);
    expect((await readdir(join(outputDir, 'checkpoints'))).length).toBeGreaterThan(0);
    dispose();
  });

  it('should re-issue the prefetched request after train() stops between steps', async () => {
    const controller = new AbortController();
    const recording = recordingSampler();
    const { grpo, dispose } = await makeScripted(
      recording.sampler,
      { maxSteps: 3, mismatch: MISMATCH, maxStaleness: 1 },
      { onStep: () => controller.abort('stop') },
    );
    await expect(grpo.train({ signal: controller.signal })).rejects.toSatisfy((error) =>
      AbortedError.isInstance(error),
    );
    const calls = recording.sampler.sampleCalls;
    expect(calls).toHaveLength(2); // step 1's and step 2's (prefetched, then discarded)
    await grpo.train();
    expect(grpo.completedSteps).toBe(3);
    expect(calls).toHaveLength(4);
    expect(calls[2]).toEqual(calls[1]);
    dispose();
  });

  it('should resume by re-issuing the in-flight requests deterministically', async () => {
    const outputDir = join(root, 'resume');
    const config = { mismatch: MISMATCH, maxStaleness: 1, outputDir, saveEvery: 1 };
    const full = await runSteps({ ...config, maxSteps: 3, outputDir: join(root, 'full') });
    const first = await runSteps({ ...config, maxSteps: 2 });
    const second = await runSteps({ ...config, maxSteps: 3 }, recordingSampler(), { resume: true });
    expect(first.sampler.sampler.sampleCalls).toHaveLength(2);
    expect([...first.sampler.sampler.sampleCalls, ...second.sampler.sampler.sampleCalls]).toEqual(
      full.sampler.sampler.sampleCalls,
    );
  });

  it('should require mismatch, refuse dynamicSampling, and hint the TRL name', async () => {
    const sampler = recordingSampler().sampler;
    const code = (error: unknown) => (error as { code?: string }).code;
    await expect(makeScripted(sampler, { maxStaleness: 1 })).rejects.toSatisfy(
      (error) =>
        InvalidArgumentError.isInstance(error) && /config\.mismatch/.test(String(error.message)),
    );
    await expect(
      makeScripted(sampler, { maxStaleness: 1, mismatch: MISMATCH, dynamicSampling: true }),
    ).rejects.toSatisfy((error) => /config\.dynamicSampling/.test(String(error)));
    await expect(
      makeScripted(sampler, { max_staleness: 1 } as Partial<GrpoConfig>),
    ).rejects.toSatisfy(
      (error) => code(error) === 'UNKNOWN_OPTION' && /maxStaleness/.test(String(error)),
    );
    await expect(makeScripted(sampler, { maxStaleness: -1 })).rejects.toThrow(/maxStaleness/);
  });

  it('should refuse to resume a run with a different maxStaleness', async () => {
    const outputDir = join(root, 'fingerprint');
    await runSteps({ maxSteps: 1, mismatch: MISMATCH, maxStaleness: 1, outputDir });
    await expect(
      makeScripted(
        recordingSampler().sampler,
        {
          maxSteps: 2,
          mismatch: MISMATCH,
          maxStaleness: 2,
          outputDir,
        },
        { resume: true },
      ),
    ).rejects.toSatisfy(
      (error) =>
        (error as { code?: string }).code === 'RESUME_MISMATCH' &&
        /maxStaleness/.test(String(error)),
    );
  });
});
