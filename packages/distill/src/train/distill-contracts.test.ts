import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortedError,
  type Completion,
  ErrorCode,
  InvalidArgumentError,
  OverwriteRefusedError,
  ResumeMismatchError,
} from '@rlvr/core';
import { MockSampler, mockCompletion } from '@rlvr/core/test';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import type { PolicyTrainer, TokenSequence } from '@rlvr/trainer';
import { describe, expect, it } from 'vitest';
import type { TraceRecord } from '../traces/trace-record.js';
import { loadDistillCheckpoint, saveDistillCheckpoint } from './distill-checkpoint.js';
import { distillStudent } from './distill-student.js';
import { annotateTopK } from './teacher.js';

const config = parseLlamaConfig({
  hidden_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  intermediate_size: 16,
  vocab_size: 12,
  max_position_embeddings: 16,
  tie_word_embeddings: true,
});

/**
 * A stand-in PolicyTrainer (no tfjs): every step adds 1 to the first weight, so the weights say how
 * many updates ran; it records what it was trained on.
 */
function fakeTrainer(seed = 1) {
  const checkpoint = createRandomCheckpoint(config, { seed });
  const trained: TokenSequence[][] = [];
  let optimizerStep = 0;
  const step = (sequences: readonly TokenSequence[]) => {
    trained.push([...sequences]);
    optimizerStep++;
    checkpoint.tensors[0]!.data[0]! += 1;
    return { loss: 1 / optimizerStep, learningRate: 1e-3, gradNorm: 1, tokens: 3, timeMs: 1 };
  };
  const trainer = {
    model: {
      toCheckpoint: () => checkpoint,
      toWeightSnapshot: (at: number) => ({ step: at, tensors: checkpoint.tensors }),
    },
    sftStep: step,
    logitsStep: (sequences: readonly TokenSequence[]) => step(sequences),
    getState: () => ({ skippedSteps: 0, optimizer: { step: optimizerStep, moments: [] } }),
    setState: (state: { optimizer: { step: number } }) => {
      optimizerStep = state.optimizer.step;
    },
  };
  return { trainer: trainer as unknown as PolicyTrainer, trained, checkpoint };
}

const traces: TraceRecord[] = Array.from({ length: 6 }, (_, index) => ({
  promptId: `p${index}`,
  prompt: `q${index}`,
  sampleIndex: 0,
  promptTokenIds: [1, 2 + (index % 5)],
  completion: 'x',
  tokenIds: [3, 4],
  topLogprobs: [
    { tokenIds: [3], logprobs: [-0.1] },
    { tokenIds: [4], logprobs: [-0.1] },
  ],
  finishReason: 'stop',
  reward: 1,
  accepted: true,
}));
const teacher = (sequences: readonly TokenSequence[]) =>
  sequences.map((sequence) => sequence.completionIds.map(() => new Float32Array(12)));

async function tempDir() {
  return mkdtemp(join(tmpdir(), 'distill-contracts-'));
}

describe('distillStudent options', () => {
  it('should reject unknown keys at every level, naming the closest valid one', async () => {
    const { trainer } = fakeTrainer();
    const base = { trainer, traces, epochs: 1, batchSize: 2, progress: false };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ batch_size: 2 }, /'options\.batch_size'.*did you mean 'batchSize'\?/],
      [{ learning_rate: 1e-3 }, /'options\.learning_rate'/],
      [
        { loss: { type: 'logits', divergence: 'jsd', temprature: 2, teacher } },
        /'options\.loss\.temprature'.*did you mean 'temperature'\?/,
      ],
      [{ checkpoint: { dir: '/tmp/x', evry: 2 } }, /did you mean 'every'\?/],
      [{ resumeFrom: { epoch: 0, ofset: 0, step: 0 } }, /did you mean 'offset'\?/],
      [
        {
          loss: { type: 'logits', divergence: 'forward-kl', teacher },
          onPolicy: {
            fraction: 0.5,
            sampler: new MockSampler({ script: [] }),
            maxNewTokens: 2,
            temp: 1,
          },
        },
        /did you mean 'temperature'\?/,
      ],
    ];
    for (const [extra, message] of cases) {
      const promise = distillStudent({ ...base, ...extra } as never);
      await expect(promise).rejects.toMatchObject({ code: ErrorCode.UNKNOWN_OPTION });
      await expect(promise).rejects.toThrow(message);
    }
  });

  it('should reject options that have no effect in the combination', async () => {
    const { trainer, trained } = fakeTrainer();
    const base = { trainer, traces, epochs: 1, batchSize: 2, progress: false };
    const cases: Record<string, unknown>[] = [
      { loss: { type: 'sft', beta: 0.5 } },
      { loss: { type: 'sft', temperature: 2 } },
      { loss: { type: 'logits', divergence: 'forward-kl', beta: 0.3 } },
      { evalEvery: 2 },
      { previousHistory: [] },
      { overwrite: true },
    ];
    for (const extra of cases) {
      await expect(distillStudent({ ...base, ...extra } as never)).rejects.toMatchObject({
        code: ErrorCode.INEFFECTIVE_OPTION,
      });
    }
    expect(trained).toHaveLength(0);
  });
});

describe('distillStudent abort contract', () => {
  it('should reject with AbortedError and neither train nor save the aborted step', async () => {
    const { trainer, trained } = fakeTrainer();
    const dir = join(await tempDir(), 'ckpt');
    const controller = new AbortController();
    let calls = 0;
    const slowTeacher = async (sequences: readonly TokenSequence[]) => {
      calls++;
      if (calls === 2) controller.abort('stop'); // aborted while the teacher scores step 2
      return teacher(sequences);
    };
    const run = distillStudent({
      trainer,
      traces,
      epochs: 1,
      batchSize: 2,
      loss: { type: 'logits', divergence: 'forward-kl', teacher: slowTeacher },
      checkpoint: { dir, every: 1 },
      signal: controller.signal,
      progress: false,
    });
    await expect(run).rejects.toSatisfy(AbortedError.isInstance);
    expect(trained).toHaveLength(1);
    expect((await loadDistillCheckpoint(dir)).resumeFrom.step).toBe(1);
  });

  it('should never train on on-policy completions the sampler aborted', async () => {
    const { trainer, trained } = fakeTrainer();
    const sampler = new MockSampler({
      script: (request) =>
        request.prompts.map((prompt, index): Completion[] => [
          {
            ...mockCompletion('ab'),
            tokenIds: [5, 6],
            finishReason: index === 0 ? 'abort' : 'stop',
            promptTokenIds: [...(prompt as number[])],
          },
        ]),
    });
    await distillStudent({
      trainer,
      traces,
      epochs: 1,
      batchSize: 3,
      loss: { type: 'logits', divergence: 'reverse-kl', teacher },
      onPolicy: { fraction: 1, sampler, maxNewTokens: 2 },
      progress: false,
    });
    expect(trained).toHaveLength(2);
    // Of each batch of 3 prompts, the first completion was aborted: 2 sequences per step.
    expect(trained.map((batch) => batch.length)).toEqual([2, 2]);
    expect(trained.flat().every((sequence) => sequence.completionIds.join() === '5,6')).toBe(true);
  });
});

describe('distillStudent resume', () => {
  it('should refuse resumeFrom on an empty folder, a missing one, or one without a checkpoint', async () => {
    const { trainer, trained } = fakeTrainer();
    const empty = await tempDir();
    const foreign = await tempDir();
    await writeFile(join(foreign, 'notes.txt'), 'mine');
    for (const resumeFrom of [empty, join(empty, 'missing'), foreign]) {
      const promise = distillStudent({
        trainer,
        traces,
        epochs: 1,
        batchSize: 2,
        resumeFrom,
        progress: false,
      });
      await expect(promise).rejects.toSatisfy(InvalidArgumentError.isInstance);
      await expect(promise).rejects.toThrow(/options\.resumeFrom.*distillation checkpoint/);
    }
    expect(trained).toHaveLength(0);
  });

  it('should resume from a checkpoint folder and refuse one made with other settings or weights', async () => {
    const dir = join(await tempDir(), 'ckpt');
    const first = fakeTrainer();
    const options = { traces, epochs: 2, batchSize: 2, seed: 4, progress: false };
    const controller = new AbortController();
    await expect(
      distillStudent({
        ...options,
        trainer: first.trainer,
        checkpoint: { dir, every: 1 },
        signal: controller.signal,
        onStep: (record) => {
          if (record.step === 4) controller.abort('crash');
        },
      }),
    ).rejects.toSatisfy(AbortedError.isInstance);

    const saved = await loadDistillCheckpoint(dir);
    // A student built from another checkpoint: refused.
    await expect(
      distillStudent({ ...options, trainer: fakeTrainer(9).trainer, resumeFrom: dir }),
    ).rejects.toThrow(/student weights/);
    // Another batch size changes the data order: refused.
    const resumed = fakeTrainer();
    resumed.checkpoint.tensors.splice(0, Infinity, ...saved.checkpoint.tensors);
    const mismatch = distillStudent({
      ...options,
      batchSize: 3,
      trainer: resumed.trainer,
      resumeFrom: dir,
    });
    await expect(mismatch).rejects.toSatisfy(ResumeMismatchError.isInstance);
    await expect(mismatch).rejects.toThrow(/'batchSize' was 2, now 3/);
    // The same settings and weights: continues at step 5 and ends where an uninterrupted run ends.
    const result = await distillStudent({
      ...options,
      trainer: resumed.trainer,
      resumeFrom: dir,
      checkpoint: { dir, every: 1 },
    });
    expect(result.steps).toBe(6);
    expect(result.history.map((record) => record.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(resumed.trained).toHaveLength(2);
    const uninterrupted = fakeTrainer();
    await distillStudent({ ...options, trainer: uninterrupted.trainer });
    expect(resumed.trained.flatMap((batch) => batch.map((s) => s.promptIds.join()))).toEqual(
      uninterrupted.trained.slice(4).flatMap((batch) => batch.map((s) => s.promptIds.join())),
    );
  });
});

describe('distillStudent never destroys what it did not write', () => {
  it('should refuse a checkpoint folder holding other files, and leave them untouched', async () => {
    const { trainer, trained } = fakeTrainer();
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.txt'), 'mine');
    const promise = distillStudent({
      trainer,
      traces,
      epochs: 1,
      batchSize: 2,
      checkpoint: { dir, every: 1 },
      overwrite: true,
      progress: false,
    });
    await expect(promise).rejects.toSatisfy(OverwriteRefusedError.isInstance);
    expect(trained).toHaveLength(0);
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    await expect(
      saveDistillCheckpoint(dir, trainer, [
        {
          step: 1,
          epoch: 0,
          position: { epoch: 0, offset: 2, step: 1 },
          loss: 1,
          learningRate: 1,
          gradNorm: 1,
          tokens: 1,
          onPolicy: false,
          timeMs: 1,
        },
      ]),
    ).rejects.toSatisfy(OverwriteRefusedError.isInstance);
    expect(await readdir(dir)).toEqual(['notes.txt']);
  });

  it("should refuse another run's checkpoint unless resuming it or overwrite: true", async () => {
    const dir = join(await tempDir(), 'ckpt');
    const options = { traces, epochs: 1, batchSize: 2, progress: false };
    await distillStudent({
      ...options,
      trainer: fakeTrainer().trainer,
      checkpoint: { dir, every: 1 },
    });
    const before = await readFile(join(dir, 'model', 'model.safetensors'));
    const second = fakeTrainer(2);
    const refused = distillStudent({
      ...options,
      trainer: second.trainer,
      checkpoint: { dir, every: 1 },
    });
    await expect(refused).rejects.toSatisfy(OverwriteRefusedError.isInstance);
    await expect(refused).rejects.toThrow(/overwrite: true/);
    expect(second.trained).toHaveLength(0);
    expect(await readFile(join(dir, 'model', 'model.safetensors'))).toEqual(before);
    await distillStudent({
      ...options,
      trainer: second.trainer,
      checkpoint: { dir, every: 1 },
      overwrite: true,
    });
    expect((await loadDistillCheckpoint(dir)).checkpoint.tensors[0]!.data).toEqual(
      second.checkpoint.tensors[0]!.data,
    );
    // No temporary folders are left next to it.
    expect((await readdir(join(dir, '..'))).sort()).toEqual(['ckpt']);
  });
});

describe('annotateTopK options', () => {
  it('should reject an unknown key naming the closest valid one', async () => {
    await expect(
      annotateTopK(traces, teacher, { k: 2, encode_prompt: () => [1] } as never),
    ).rejects.toThrow(/did you mean 'encodePrompt'\?/);
  });
});
