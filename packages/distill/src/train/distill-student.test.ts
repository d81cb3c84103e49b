import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng } from '@rlvr/core';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import {
  createLlamaModel,
  createPolicyTrainer,
  type LlamaModel,
  selectBackend,
} from '@rlvr/trainer';
import { beforeAll, describe, expect, it } from 'vitest';
import { filterTraces } from '../filter/filter-traces.js';
import { generateTraces } from '../traces/generate-traces.js';
import { readTraces } from '../traces/trace-file.js';
import { loadDistillCheckpoint } from './distill-checkpoint.js';
import { DISTILL_STUDENT_DEFAULTS } from './distill-options.js';
import { distillStudent } from './distill-student.js';
import { assertSharedTokenizer } from './shared-tokenizer.js';
import { annotateTopK, teacherFromModel } from './teacher.js';

// A synthetic verifiable task: copy a 4-letter string ("cafe=" → "cafe").
const files = buildCharTokenizer({ characters: 'abcdef=' });
const tokenizer = createTokenizer(files);
const eos = tokenizer.eosTokenId!;
const vocab = (files.json as { model: { vocab: Record<string, number> } }).model.vocab;
const vocabSize = Object.keys(vocab).length;

function words(seed: number, count: number): string[] {
  const rng = createRng(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: 4 }, () => 'abcdef'[rng.nextInt(6)]).join(''),
  );
}
const trainWords = words(1, 200);
const heldOut = words(2, 40).filter((word) => !trainWords.includes(word));

function config(hidden: number, layers: number) {
  return parseLlamaConfig({
    hidden_size: hidden,
    num_hidden_layers: layers,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: hidden * 2,
    vocab_size: vocabSize,
    max_position_embeddings: 32,
    tie_word_embeddings: true,
    eos_token_id: eos,
  });
}

async function greedyAccuracy(model: LlamaModel, prompts: string[]): Promise<number> {
  const sampler = await createOnnxSampler({
    checkpoint: { ...model.toCheckpoint(), tokenizer: files },
    workers: 0,
  });
  try {
    const groups = await sampler.sample({
      prompts: prompts.map((word) => `${word}=`),
      n: 1,
      maxNewTokens: 6,
      temperature: 0,
    });
    return (
      groups.filter((group, index) => group[0]!.text === prompts[index]).length / prompts.length
    );
  } finally {
    await sampler.close();
  }
}

describe('distillStudent (end to end: real teacher, ONNX sampling, verified traces, tfjs student)', () => {
  let teacher: LlamaModel;
  let traceFile: string;

  beforeAll(async () => {
    // The learning thresholds below were tuned on a teacher trained with XNNPACK matMuls; with
    // onnxruntime's (the default where installed) its 150 steps round differently and end in another
    // (better: 0.97 vs 0.86 held-out) teacher whose traces this seed's student learns less from.
    // The trainer is numerically the same on both engines given the same data (tested in
    // @rlvr/trainer), so this end-to-end test keeps the engine it was tuned on.
    await selectBackend({ matMul: 'backend' });
    // Teacher: SFT on the task until it copies well.
    teacher = await createLlamaModel(createRandomCheckpoint(config(64, 2), { seed: 3 }));
    const trainer = await createPolicyTrainer(teacher, {
      schedule: { learningRate: 3e-3, schedule: 'constant', warmupSteps: 5 },
    });
    const rng = createRng(4);
    for (let step = 0; step < 150; step++) {
      const batch = Array.from({ length: 32 }, () => trainWords[rng.nextInt(trainWords.length)]!);
      trainer.sftStep(
        batch.map((word) => ({
          promptIds: tokenizer.encode(`${word}=`),
          completionIds: [...tokenizer.encode(word), eos],
        })),
      );
    }
    trainer.dispose();
    // Teacher traces on the training prompts, sampled with temperature 1 and verified.
    const sampler = await createOnnxSampler({
      checkpoint: { ...teacher.toCheckpoint(), tokenizer: files },
      workers: 0,
    });
    traceFile = join(await mkdtemp(join(tmpdir(), 'distill-e2e-')), 'traces.jsonl');
    await generateTraces({
      sampler,
      prompts: trainWords
        .slice(0, 120)
        .map((word, index) => ({ id: `w${index}`, prompt: `${word}=`, answer: word })),
      k: 4,
      sampling: { maxNewTokens: 6, temperature: 1, seed: 5 },
      reward: ({ completion, answer }) => (completion === answer ? 1 : 0),
      outPath: traceFile,
      progress: false,
    });
    await sampler.close();
  }, 240_000);

  it('should make a fresh student clearly better on held-out prompts with SFT on verified traces', async () => {
    const teacherAccuracy = await greedyAccuracy(teacher, heldOut);
    const { kept, report } = filterTraces(await readTraces(traceFile), { maxPerPrompt: 2 });
    expect(report.accepted).toBeGreaterThan(0);
    expect(kept.every((trace) => trace.accepted)).toBe(true);
    const student = await createLlamaModel(createRandomCheckpoint(config(32, 2), { seed: 6 }));
    assertSharedTokenizer(
      { config: teacher.config, tokenizer: files },
      { config: student.config, tokenizer: files },
    );
    expect(student.parameterCount).toBeLessThan(teacher.parameterCount / 2);
    const before = await greedyAccuracy(student, heldOut);
    const trainer = await createPolicyTrainer(student, {
      schedule: { learningRate: 5e-3, schedule: 'constant' },
    });
    const { history } = await distillStudent({
      trainer,
      traces: kept,
      epochs: 12,
      batchSize: 32,
      seed: 7,
      progress: false,
    });
    const after = await greedyAccuracy(student, heldOut);
    expect(history.at(-1)!.loss).toBeLessThan(history[0]!.loss);
    // Chance is ~0 (6^4 strings); a clear margin that noise cannot fake.
    expect(before).toBeLessThan(0.1);
    expect(after).toBeGreaterThan(before + 0.3);
    console.log(
      `copy task, held-out greedy accuracy: teacher ${teacherAccuracy}, student before ${before}, after SFT ${after} (${kept.length} traces)`,
    );
    trainer.dispose();
    student.dispose();
  }, 240_000);

  it('should lower the divergence to the teacher with logit distillation (full vocab and cached top-k)', async () => {
    const traces = (await readTraces(traceFile)).filter((trace) => trace.accepted).slice(0, 64);
    const teacherLogits = teacherFromModel(teacher);
    const annotated = await annotateTopK(traces, teacherLogits, { k: 4 });
    expect(annotated[0]!.topLogprobs).toHaveLength(annotated[0]!.tokenIds.length);
    for (const loss of [
      { type: 'logits' as const, divergence: 'forward-kl' as const, teacher: teacherLogits },
      { type: 'logits' as const, divergence: 'jsd' as const, beta: 0.5 },
    ]) {
      const student = await createLlamaModel(createRandomCheckpoint(config(32, 2), { seed: 8 }));
      const trainer = await createPolicyTrainer(student, {
        schedule: { learningRate: 5e-3, schedule: 'constant' },
      });
      const { history } = await distillStudent({
        trainer,
        traces: annotated,
        loss,
        epochs: 6,
        batchSize: 16,
        seed: 9,
        progress: false,
      });
      const first = history.slice(0, 3).reduce((sum, r) => sum + r.loss, 0) / 3;
      const last = history.slice(-3).reduce((sum, r) => sum + r.loss, 0) / 3;
      expect(last).toBeLessThan(first * 0.7);
      trainer.dispose();
      student.dispose();
    }
  }, 240_000);

  it("should train on the student's own samples scored by the teacher (on-policy, λ = 0.5)", async () => {
    const traces = (await readTraces(traceFile)).filter((trace) => trace.accepted).slice(0, 48);
    const student = await createLlamaModel(createRandomCheckpoint(config(32, 2), { seed: 10 }));
    const studentSampler = await createOnnxSampler({
      checkpoint: { ...student.toCheckpoint(), tokenizer: files },
      workers: 0,
    });
    const calls = { sample: 0, update: 0 };
    const temperatures = new Set<number | undefined>();
    const sampler = {
      specificationVersion: 'v1' as const,
      modelId: 'student',
      sample: (...args: Parameters<typeof studentSampler.sample>) => {
        calls.sample++;
        temperatures.add(args[0].temperature);
        return studentSampler.sample(...args);
      },
      updateWeights: (...args: Parameters<typeof studentSampler.updateWeights>) => {
        calls.update++;
        return studentSampler.updateWeights(...args);
      },
    };
    const trainer = await createPolicyTrainer(student, {
      schedule: { learningRate: 5e-3, schedule: 'constant' },
    });
    const { history } = await distillStudent({
      trainer,
      traces,
      loss: { type: 'logits', divergence: 'reverse-kl', teacher: teacherFromModel(teacher) },
      onPolicy: { fraction: 0.5, sampler, maxNewTokens: 6 },
      epochs: 4,
      batchSize: 16,
      seed: 11,
      progress: false,
    });
    const onPolicySteps = history.filter((record) => record.onPolicy).length;
    expect(onPolicySteps).toBeGreaterThan(0);
    expect(onPolicySteps).toBeLessThan(history.length);
    expect(calls.sample).toBe(onPolicySteps);
    expect(calls.update).toBe(onPolicySteps); // fresh student weights before every on-policy batch
    // onPolicy.temperature omitted: the documented default is what the sampler is asked for
    expect([...temperatures]).toEqual([DISTILL_STUDENT_DEFAULTS.onPolicy.temperature]);
    await studentSampler.close();
    trainer.dispose();
    student.dispose();
  }, 240_000);

  it('should resume from a checkpoint exactly where an interrupted run stopped', async () => {
    const traces = (await readTraces(traceFile)).filter((trace) => trace.accepted).slice(0, 40);
    const run = async (dir: string | undefined, stopAfter?: number) => {
      const student = await createLlamaModel(createRandomCheckpoint(config(32, 1), { seed: 12 }));
      const trainer = await createPolicyTrainer(student, {
        schedule: { learningRate: 5e-3, schedule: 'cosine', totalSteps: 12 },
      });
      const controller = new AbortController();
      const result = await distillStudent({
        trainer,
        traces,
        epochs: 3,
        batchSize: 8,
        seed: 13,
        progress: false,
        signal: controller.signal,
        ...(dir ? { checkpoint: { dir, every: 1 } } : {}),
        onStep: (record) => {
          if (stopAfter !== undefined && record.step === stopAfter) controller.abort('kill');
        },
      }).catch((error: unknown) => ({ aborted: error }));
      const weights = student.toCheckpoint().tensors.map((tensor) => Array.from(tensor.data));
      trainer.dispose();
      student.dispose();
      return { result, weights };
    };
    const uninterrupted = await run(undefined);
    const dir = join(await mkdtemp(join(tmpdir(), 'distill-ckpt-')), 'latest');
    const interrupted = await run(dir, 7);
    expect('aborted' in interrupted.result).toBe(true);
    const saved = await loadDistillCheckpoint(dir);
    expect(saved.resumeFrom).toEqual({ epoch: 1, offset: 16, step: 7 });
    const student = await createLlamaModel(saved.checkpoint);
    const trainer = await createPolicyTrainer(student, {
      schedule: { learningRate: 5e-3, schedule: 'cosine', totalSteps: 12 },
    });
    trainer.setState(saved.trainerState);
    const resumed = await distillStudent({
      trainer,
      traces,
      epochs: 3,
      batchSize: 8,
      seed: 13,
      progress: false,
      resumeFrom: saved.resumeFrom,
      previousHistory: saved.history,
    });
    const full = uninterrupted.result as Awaited<ReturnType<typeof distillStudent>>;
    expect(resumed.history.map((r) => r.loss)).toEqual(full.history.map((r) => r.loss));
    expect(student.toCheckpoint().tensors.map((tensor) => Array.from(tensor.data))).toEqual(
      uninterrupted.weights,
    );
    trainer.dispose();
    student.dispose();
  }, 240_000);

  it('should reject mismatched tokenizers and missing teachers with typed errors', async () => {
    const other = buildCharTokenizer({ characters: 'xyzuvw=' });
    expect(() =>
      assertSharedTokenizer(
        { config: config(32, 1), tokenizer: files },
        { config: config(32, 1), tokenizer: other },
      ),
    ).toThrow(/student.tokenizer/);
    const student = await createLlamaModel(createRandomCheckpoint(config(32, 1), { seed: 1 }));
    const trainer = await createPolicyTrainer(student, {});
    const traces = (await readTraces(traceFile)).slice(0, 2);
    await expect(
      distillStudent({
        trainer,
        traces,
        epochs: 1,
        batchSize: 2,
        loss: { type: 'logits', divergence: 'forward-kl' },
      }),
    ).rejects.toThrow(/topLogprobs/);
    await expect(distillStudent({ trainer, traces, epochs: 0, batchSize: 2 })).rejects.toThrow(
      /options.epochs/,
    );
    trainer.dispose();
    student.dispose();
  });
});
