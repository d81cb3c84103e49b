import type { Checkpoint } from '@rlvr/model';
import { type CurvePoint, meanAccuracyCurve } from '@rlvr/voting';
import { correctness, r1Format, taskAnswer } from './rewards.js';
import { createSampler, type Runtime } from './runtime.js';
import type { ModArithProblem } from './task.js';

/** Held-out results of one model. */
export type ModelEvaluation = {
  name: string;
  parameters: number;
  /** pass@k and maj@k (exact estimators from n samples per prompt) for k = 1, 2, 4, 8, 16. */
  curve: CurvePoint[];
  /** Greedy (temperature 0) accuracy. */
  greedyAccuracy: number;
  formatRate: number;
  meanLength: number;
  samplesPerPrompt: number;
  prompts: number;
  /** A few completions for the report. */
  examples: { prompt: string; gold: string; completion: string; correct: boolean }[];
  timeMs: number;
};

export const KS = [1, 2, 4, 8, 16];

/**
 * Samples `samples` completions per held-out prompt (temperature `temperature`) with @rlvr/rollout
 * and computes pass@k / maj@k with @rlvr/voting (answers from the `<answer>` tag, equivalence by the
 * math verifier), plus greedy accuracy.
 */
export async function evaluateModel(options: {
  name: string;
  parameters: number;
  runtime: Runtime;
  checkpoint: Checkpoint;
  problems: readonly ModArithProblem[];
  samples: number;
  temperature: number;
  maxNewTokens: number;
  seed: number;
}): Promise<ModelEvaluation> {
  const started = performance.now();
  const sampler = await createSampler(options.runtime, options.checkpoint);
  try {
    const prompts = options.problems.map((problem) => problem.prompt);
    const groups = await sampler.sample({
      prompts,
      n: options.samples,
      maxNewTokens: options.maxNewTokens,
      temperature: options.temperature,
      seed: options.seed,
    });
    const greedy = await sampler.sample({
      prompts,
      n: 1,
      maxNewTokens: options.maxNewTokens,
      temperature: 0,
    });
    const records = groups.map((group, index) => ({
      samples: group.map((completion) => completion.text),
      gold: options.problems[index]!.answer,
    }));
    const curve = meanAccuracyCurve(records, {
      ks: KS.filter((k) => k <= options.samples),
      extract: taskAnswer,
    });
    const all = groups.flat();
    const examples = groups.slice(0, 4).flatMap((group, index) =>
      group.slice(0, 2).map((completion) => ({
        prompt: prompts[index]!,
        gold: options.problems[index]!.answer,
        completion: completion.text,
        correct: correctness(completion.text, options.problems[index]!.answer) === 1,
      })),
    );
    return {
      name: options.name,
      parameters: options.parameters,
      curve,
      greedyAccuracy:
        greedy.reduce(
          (sum, group, index) => sum + correctness(group[0]!.text, options.problems[index]!.answer),
          0,
        ) / greedy.length,
      formatRate: all.reduce((sum, completion) => sum + r1Format(completion.text), 0) / all.length,
      meanLength: all.reduce((sum, completion) => sum + completion.tokenIds.length, 0) / all.length,
      samplesPerPrompt: options.samples,
      prompts: prompts.length,
      examples,
      timeMs: performance.now() - started,
    };
  } finally {
    await sampler.close();
  }
}
