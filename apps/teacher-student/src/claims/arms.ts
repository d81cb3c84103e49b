import { join } from 'node:path';
import type { Checkpoint } from '@rlvr/model';
import type { GrpoConfig as TrainerGrpoConfig } from '@rlvr/trainer';
import { claimSteps, type RunConfig } from '../config.js';
import { type GrpoResult, runGrpo } from '../grpo.js';
import { type ProgressMode, phaseProgress } from '../progress.js';
import { correctness, hedged, naiveCorrectness } from '../rewards.js';
import { createSampler, type Runtime } from '../runtime.js';
import type { ModArithProblem } from '../task.js';

/** A GRPO arm of a claim, without its weights. */
export type ArmResult = Omit<GrpoResult, 'checkpoint'>;

/** What every arm shares: the SFT teacher, the teacher run's seed and GRPO settings. */
export type ArmContext = {
  config: RunConfig;
  runtime: Runtime;
  outDir: string;
  sftTeacher: Checkpoint;
  train: readonly ModArithProblem[];
  heldOut: readonly ModArithProblem[];
  progressMode: ProgressMode;
  log: (line: string) => void;
};

/**
 * One arm: the teacher's GRPO run from the SFT teacher (same seed, same settings) for
 * `claimSteps(config)` steps, with one thing changed — the reward (`naive`) or trainer options.
 */
export async function runArm(
  context: ArmContext,
  name: string,
  change: {
    reward?: 'robust' | 'naive';
    overrides?: Partial<TrainerGrpoConfig>;
    /** Start from this SFT teacher instead of the main one (the hacking claim's own mix). */
    from?: Checkpoint;
    /** GRPO seed (data order, sampling) instead of the run's. */
    seed?: number;
    /** GRPO steps instead of `claimSteps(config)`. */
    steps?: number;
  },
): Promise<GrpoResult> {
  const { config } = context;
  const steps = change.steps ?? claimSteps(config);
  return runGrpo({
    runtime: context.runtime,
    checkpoint: change.from ?? context.sftTeacher,
    train: context.train,
    heldOut: context.heldOut,
    config: config.grpo,
    maxSteps: steps,
    maxNewTokens: config.maxNewTokens,
    seed: change.seed ?? config.seed,
    outputDir: join(context.outDir, 'grpo', 'claims', name),
    label: `claims ${name}`,
    ...(change.reward === undefined ? {} : { reward: change.reward }),
    ...(change.overrides === undefined ? {} : { overrides: change.overrides }),
    progress: phaseProgress(`claims: ${name}`, steps, context.progressMode),
    log: context.log,
  });
}

/** A sampled held-out completion of the naive-reward arm with both checkers' verdicts. */
export type Transcript = {
  prompt: string;
  gold: string;
  completion: string;
  naive: number;
  robust: number;
  hedged: boolean;
};

/**
 * Held-out transcripts of a policy (temperature 1) with the naive and the robust verdicts, plus
 * the counts the report shows: how many answers the naive checker accepts that the robust math
 * verifier rejects (the exploit, caught), and how many are hedged lists.
 */
export async function transcripts(
  runtime: Runtime,
  checkpoint: Checkpoint,
  problems: readonly ModArithProblem[],
  options: { maxNewTokens: number; seed: number; samples: number },
): Promise<{ examples: Transcript[]; total: number; caught: number; hedged: number }> {
  const sampler = await createSampler(runtime, checkpoint);
  try {
    const groups = await sampler.sample({
      prompts: problems.map((problem) => problem.prompt),
      n: options.samples,
      maxNewTokens: options.maxNewTokens,
      temperature: 1,
      seed: options.seed,
    });
    const all = groups.flatMap((group, index) =>
      group.map((completion) => {
        const problem = problems[index]!;
        return {
          prompt: problem.prompt,
          gold: problem.answer,
          completion: completion.text,
          naive: naiveCorrectness(completion.text, problem.answer),
          robust: correctness(completion.text, problem.answer),
          hedged: hedged(completion.text) === 1,
        };
      }),
    );
    const exploits = all.filter((entry) => entry.naive === 1 && entry.robust === 0);
    const others = all.filter((entry) => !(entry.naive === 1 && entry.robust === 0));
    return {
      examples: [...exploits.slice(0, 6), ...others.slice(0, 2)],
      total: all.length,
      caught: exploits.length,
      hedged: all.filter((entry) => entry.hedged).length,
    };
  } finally {
    await sampler.close();
  }
}
