import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortedError,
  type Completion,
  type SampleRequest,
  type Sampler,
  type WeightSnapshot,
} from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { TrainingStalledError } from '../errors/training-stalled-error.js';
import { CORRECT, constantSampler, makeScripted, scripted } from '../testing/grpo-scripted.js';
import { maxDigitTask } from '../testing/grpo-task.js';
import { TfjsSampler } from '../testing/tfjs-sampler.js';

let root: string;

beforeAll(async () => {
  await selectBackend({ candidates: ['cpu'] });
  root = await mkdtemp(join(tmpdir(), 'rlvr-grpo-contracts-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function lines(path: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A sampler that reports only behaviour logprobs (as most do): `modelLogprobs` are dropped. */
function behaviourOnly(inner: TfjsSampler): Sampler {
  return {
    specificationVersion: 'v1',
    modelId: 'behaviour-only',
    async sample(request: SampleRequest) {
      const groups = await inner.sample({ ...request, returnModelLogprobs: false });
      return groups.map((group) => group.map(({ modelLogprobs: _drop, ...rest }) => rest));
    },
    updateWeights: (snapshot: WeightSnapshot) => inner.updateWeights(snapshot),
  };
}

describe('GrpoTrainer: logprobs at the sampling temperature (point 1)', () => {
  it('should train on-policy at T = 0.7: trainer logprobs match the tempered behaviour logprobs', async () => {
    const task = maxDigitTask();
    const model = await task.model(11);
    const inner = await TfjsSampler.fromModel(model, task.tokenizer);
    const { grpo, dispose } = await makeScripted(
      behaviourOnly(inner),
      { temperature: 0.7, groupSize: 4, maxNewTokens: 3, maxSteps: 2 },
      { model },
    );
    expect(grpo.policy.temperature).toBe(0.7);
    for (let step = 0; step < 2; step++) {
      const record = await grpo.step();
      // Before: the trainer used T = 1 against T = 0.7 samples (≈0.7 nats apart).
      expect(record.metrics['mismatch/max_abs_logprob_diff']).toBeLessThan(1e-4);
      expect(record.metrics['mismatch/is_ratio_min']).toBeGreaterThan(0.9999);
    }
    expect(inner.updates).toEqual([1, 2]);
    dispose();
    await inner.close();
  });

  it('should refuse temperature 0 (greedy is not a policy to train)', async () => {
    await expect(makeScripted(constantSampler(['3', '1']), { temperature: 0 })).rejects.toThrow(
      /config\.temperature.*> 0/,
    );
  });
});

describe('GrpoTrainer: abort contract (point 2)', () => {
  it('should drop and count an aborted group, never scoring or logging it', async () => {
    const scored: string[] = [];
    const sampler = new MockSampler({
      script: () => [
        [scripted('3'), scripted('1', { finishReason: 'abort' })],
        [scripted('6'), scripted('2')],
      ],
    });
    const outputDir = join(root, 'aborted-group');
    const { grpo, dispose } = await makeScripted(
      sampler,
      { maxSteps: 1, outputDir },
      {
        rewards: [
          {
            name: 'correct',
            fn: (input) => {
              scored.push(input.promptId!);
              return CORRECT.fn(input);
            },
          },
        ],
      },
    );
    const { last } = await grpo.train();
    expect(scored).toEqual(['b', 'b']);
    expect(last!.metrics['skipped/aborted_groups']).toBe(1);
    expect(last!.metrics['dynamic_sampling/generated_groups']).toBe(1);
    expect(last!.metrics['tokens/loss']).toBe(2);
    expect(last!.diagnostics!.join('\n')).toMatch(/1 aborted group/);
    const rows = await lines(join(outputDir, 'completions.jsonl'));
    expect(rows.map((row) => row.promptId)).toEqual(['b', 'b']);
    dispose();
  });

  it('should drop an aborted group whose stand-in completions carry no prompt ids', async () => {
    // A remote sampler cancels a group and returns completions without promptTokenIds; with no
    // tokenizer the trainer must still drop the group instead of asking for one.
    const { promptTokenIds: _ids, ...bare } = scripted('1', { finishReason: 'abort' });
    const sampler = new MockSampler({
      script: () => [
        [bare, bare],
        [scripted('6'), scripted('2')],
      ],
    });
    const { grpo, dispose } = await makeScripted(sampler, { maxSteps: 1 });
    const { last } = await grpo.train();
    expect(last!.metrics['skipped/aborted_groups']).toBe(1);
    dispose();
  });

  it('should leave no trace of a step aborted before its update, and repeat it exactly', async () => {
    const hooks = { sample: () => {}, score: () => {} };
    const sampler = new MockSampler({
      script: (request) => {
        hooks.sample(); // an abort during the call; this sampler resolves anyway
        return request.prompts.map(() => [scripted('3'), scripted('1')]);
      },
    });
    const outputDir = join(root, 'aborted-step');
    const { grpo, dispose } = await makeScripted(
      sampler,
      { maxSteps: 2, outputDir, saveEvery: 1 },
      {
        rewards: [
          {
            name: 'correct',
            fn: (input) => {
              hooks.score();
              return CORRECT.fn(input);
            },
          },
        ],
      },
    );
    const isAborted = (error: unknown) => AbortedError.isInstance(error);
    const during = new AbortController();
    hooks.sample = () => during.abort('stop');
    await expect(grpo.step({ signal: during.signal })).rejects.toSatisfy(isAborted);
    const scoring = new AbortController();
    hooks.sample = () => {};
    hooks.score = () => scoring.abort('stop');
    await expect(grpo.step({ signal: scoring.signal })).rejects.toSatisfy(isAborted);
    hooks.score = () => {};
    await expect(grpo.train({ signal: AbortSignal.abort('early') })).rejects.toSatisfy(isAborted);
    expect(sampler.sampleCalls).toHaveLength(2);
    expect(grpo.completedSteps).toBe(0);
    expect(sampler.weightUpdates).toHaveLength(0);
    expect(await readdir(outputDir)).toEqual([]);
    // The data position and the RNG were restored: the retry repeats the same request.
    const record = await grpo.step();
    expect(record.step).toBe(1);
    expect(sampler.sampleCalls).toHaveLength(3);
    expect(sampler.sampleCalls[1]).toEqual(sampler.sampleCalls[0]);
    expect(sampler.sampleCalls[2]).toEqual(sampler.sampleCalls[0]);
    expect(sampler.weightUpdates).toHaveLength(1);
    expect((await lines(join(outputDir, 'metrics.jsonl'))).map((line) => line.step)).toEqual([1]);
    dispose();
  });
});

describe('GrpoTrainer: advantage settings (point 5)', () => {
  it("should use the baseline's own scaling when scaleRewards is unset (RLOO: none)", async () => {
    const outputDir = join(root, 'rloo');
    const { grpo, dispose } = await makeScripted(constantSampler(['3', '1', '0', '2']), {
      groupSize: 4,
      promptsPerStep: 1,
      maxSteps: 1,
      advantageBaseline: 'leave-one-out',
      outputDir,
    });
    await grpo.train();
    const rows = await lines(join(outputDir, 'completions.jsonl'));
    // Rewards [1, 0, 0, 0]: leave-one-out baselines [0, 1/3, 1/3, 1/3], not divided by a std.
    const advantages = rows.map((row) => row.advantage as number);
    [1, -1 / 3, -1 / 3, -1 / 3].forEach((want, index) => {
      expect(advantages[index]).toBeCloseTo(want, 12);
    });
    dispose();
  });

  it('should train GDPO and REINFORCE++ through GrpoTrainer', async () => {
    const two = [
      CORRECT,
      {
        name: 'short',
        fn: ({ completion }: { completion: string }) => (completion.length === 1 ? 1 : 0),
      },
    ];
    for (const config of [
      { multiReward: 'normalize_then_sum' as const },
      { advantageBaseline: 'reinforce-plus-plus' as const },
    ]) {
      const { grpo, dispose } = await makeScripted(
        constantSampler(['3', '11']),
        { ...config, maxSteps: 1 },
        { rewards: two },
      );
      const { last } = await grpo.train();
      expect(last!.metrics.optimizer_step).toBe(1);
      expect(last!.metrics.grad_norm).toBeGreaterThan(0);
      dispose();
    }
  });

  it('should reject an invalid combination at construction, naming the config field', async () => {
    const cases = [
      [{ advantageBaseline: 'reinforce-plus-plus', scaleRewards: 'group' }, 'config.scaleRewards'],
      [{ multiReward: 'normalize_then_sum', scaleRewards: 'group' }, 'config.scaleRewards'],
      [
        { multiReward: 'normalize_then_sum', advantageBaseline: 'leave-one-out' },
        'config.advantageBaseline',
      ],
    ] as const;
    for (const [config, field] of cases) {
      const sampler = constantSampler(['3', '1']);
      await expect(makeScripted(sampler, config)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        parameter: field,
      });
      expect(sampler.sampleCalls).toHaveLength(0);
    }
  });
});

describe('GrpoTrainer: non-finite updates (point 6)', () => {
  async function nanModel() {
    const model = await maxDigitTask().model(5);
    const norm = model.params.get('model.norm.weight')!;
    model.replaceParams(new Map([['model.norm.weight', tf.fill(norm.shape, Number.NaN)]]));
    return model;
  }

  it("should skip, count and log non-finite updates with onNonFinite 'skip', then stop stalled", async () => {
    const sampler = constantSampler(['3', '1']);
    const { grpo, logs, dispose } = await makeScripted(
      sampler,
      { maxSteps: 5, maxConsecutiveSkips: 3 },
      { model: await nanModel() },
    );
    for (const step of [1, 2]) {
      const record = await grpo.step();
      expect(record.step).toBe(step);
      expect(record.metrics.skipped_updates).toBe(1);
      expect(record.metrics.entropy).toBeUndefined();
      expect(Object.values(record.metrics).every(Number.isFinite)).toBe(true);
    }
    expect(logs.join('\n')).toMatch(/update\(s\) skipped/);
    expect(sampler.weightUpdates).toHaveLength(0); // nothing changed, nothing pushed
    await expect(grpo.train()).rejects.toSatisfy((error) => TrainingStalledError.isInstance(error));
    expect(grpo.completedSteps).toBe(2);
    dispose();
  });

  it("should throw at the first non-finite value with onNonFinite 'error'", async () => {
    const { grpo, dispose } = await makeScripted(
      constantSampler(['3', '1']),
      { onNonFinite: 'error' },
      { model: await nanModel() },
    );
    await expect(grpo.step()).rejects.toMatchObject({ code: 'NON_FINITE' });
    dispose();
  });
});

describe('GrpoTrainer: weight sync (point 8)', () => {
  const frozen = (): Sampler & { calls: number } => {
    const sampler = {
      specificationVersion: 'v1' as const,
      modelId: 'frozen',
      calls: 0,
      async sample(request: SampleRequest): Promise<Completion[][]> {
        sampler.calls += 1;
        return request.prompts.map(() => [scripted('3'), scripted('1')]);
      },
    };
    return sampler;
  };

  it('should refuse a sampler without updateWeights unless syncWeights is false', async () => {
    await expect(makeScripted(frozen())).rejects.toMatchObject({
      parameter: 'options.sampler',
      message: expect.stringMatching(/updateWeights.*syncWeights: false/),
    });
    const sampler = frozen();
    const { grpo, dispose } = await makeScripted(sampler, { syncWeights: false, maxSteps: 1 });
    const { last } = await grpo.train();
    expect(last!.metrics.optimizer_step).toBe(1);
    expect(sampler.calls).toBe(1);
    dispose();
  });
});
