import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError, type Sampler } from '@rlvr/core';
import { createTokenizer, type Tokenizer, type TokenizerFiles } from '@rlvr/model';
import { createGrpoTrainer, createLlamaModel } from '@rlvr/trainer';
import { type RunConfig, validateConfig } from './config.js';
import { grpoRewards, trainerConfig } from './grpo.js';
import { parametersOf, randomCheckpoint } from './models.js';
import { createRuntime, type Runtime } from './runtime.js';
import { buildTaskTokenizer, type ModArithProblem, makeSplits } from './task.js';

const FN = 'teacher-student';

/** A run config checked end to end, with what the checks computed. */
export type CheckedRun = {
  config: RunConfig;
  runtime: Runtime;
  tokenizerFiles: TokenizerFiles;
  tokenizer: Tokenizer;
  vocabSize: number;
  teacherParameters: number;
  studentParameters: number;
  splits: { train: ModArithProblem[]; eval: ModArithProblem[] };
  /** Prompt + completion never exceed this many positions. */
  maxPositions: number;
};

/** A sampler that is never asked for samples (construction-time checks only). */
const idleSampler: Sampler = {
  specificationVersion: 'v1',
  modelId: 'teacher-student-config-check',
  sample: () => Promise.reject(new Error('the config check never samples')),
  updateWeights: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

/**
 * Lets @rlvr/trainer itself judge the `grpo` section: builds a `GrpoTrainer` with exactly the
 * phase's trainer config on a tiny random model and an idle sampler, in a temporary folder (never
 * the run's), and rethrows its errors naming the run config's field (`config.beta` → `grpo.beta`).
 */
async function checkTrainerConfig(
  config: RunConfig,
  tokenizerFiles: TokenizerFiles,
  maxPositions: number,
): Promise<void> {
  const tiny = { hiddenSize: 8, layers: 1, heads: 2, kvHeads: 1, intermediateSize: 8 };
  const model = await createLlamaModel(
    randomCheckpoint(tiny, tokenizerFiles, { seed: 0, maxPositions }),
  );
  const scratch = await mkdtemp(join(tmpdir(), 'rlvr-teacher-student-check-'));
  try {
    const grpo = await createGrpoTrainer({
      model,
      sampler: idleSampler,
      dataset: [{ id: 'check', prompt: '(1+1)%10=', answer: '2' }],
      rewards: grpoRewards(config.grpo.formatWeight),
      config: trainerConfig(config.grpo, {
        maxSteps: config.grpo.maxSteps,
        maxNewTokens: config.maxNewTokens,
        seed: config.seed,
        outputDir: join(scratch, 'grpo'),
      }),
      overwrite: true,
      onLog: () => {},
    });
    grpo.dispose();
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) {
      // The trainer names its config's fields `config.*`; anything else is still the grpo section.
      const field = /^config\.(.+)$/.exec(error.parameter)?.[1];
      throw new InvalidArgumentError({
        parameter: field === undefined ? 'grpo' : `grpo.${field}`,
        functionName: FN,
        value: error.value,
        expected: `a setting @rlvr/trainer's GrpoTrainer accepts (${error.message})`,
        code: error.code,
        cause: error,
      });
    }
    throw error;
  } finally {
    model.dispose();
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Validates a whole run before anything is written: the config's fields and keys, the student's
 * size against the teacher's, the task splits, the training backend, and the `grpo` section as
 * @rlvr/trainer sees it. {@link runTeacherStudent} calls it first; `--fresh` and `config.json`
 * come after it.
 * @throws {InvalidArgumentError} naming the field (`grpo.beta`, `student`, `--max-steps`, …).
 */
export async function checkRun(input: RunConfig): Promise<CheckedRun> {
  const config = validateConfig(input);
  const tokenizerFiles = buildTaskTokenizer();
  const tokenizer = createTokenizer(tokenizerFiles);
  const vocabSize = tokenizer.vocabSize;
  const splits = makeSplits(config.task, { ...config.data, seed: config.seed });
  const maxPositions = 2 * config.task.maxTerms + 8 + config.maxNewTokens + 8;
  const runtime = await createRuntime(config);
  await checkTrainerConfig(config, tokenizerFiles, maxPositions);
  return {
    config,
    runtime,
    tokenizerFiles,
    tokenizer,
    vocabSize,
    teacherParameters: parametersOf(config.teacher, vocabSize),
    studentParameters: parametersOf(config.student, vocabSize),
    splits,
    maxPositions,
  };
}
