import type { Checkpoint } from '@rlvr/model';
import { claimSteps } from '../config.js';
import { type ArmContext, type ArmResult, runArm, type Transcript, transcripts } from './arms.js';
import { type BudgetPoint, thinkingBudgetCurve } from './budget.js';

export type { ArmResult, Transcript } from './arms.js';
export type { BudgetPoint } from './budget.js';
export { claimTargets } from './targets.js';

/** What the claims phase measured (`report.json` → `claims`). */
export type ClaimsResult = {
  /** GRPO steps of each arm; the teacher run's held-out check at this step is the control. */
  steps: number;
  /**
   * (a) The teacher's GRPO rewarded by the naive checker instead of the math verifier, one arm per
   * GRPO seed of `claims.hackingSeeds` (`seed`, `seed + 1`, …; the first is the run's seed).
   */
  naiveReward: { seed: number; arm: ArmResult }[];
  /**
   * (a)'s control when the claim has its own warm-start mix (`claims.hackingWarmStart`): the same
   * GRPO run from the same SFT teacher, rewarded by the verifier. Absent: the teacher run is it.
   */
  hackingControl?: ArmResult;
  /** The hedged-answer mix of (a)'s SFT teacher. */
  hackingWarmStart: { hedgeRate: number; hedgeMaxExtra: number };
  /** Held-out transcripts of the first naive arm's final policy with both verdicts. */
  hacking: { examples: Transcript[]; total: number; caught: number; hedged: number };
  /**
   * (b) On/off pairs, one per GRPO seed, each continuing the RL teacher for
   * `dynamicSamplingSteps` steps with `groupSize: dynamicSamplingGroupSize`: `on` with the run's
   * dynamic sampling, `off` with `dynamicSampling: false`.
   */
  dynamicSampling: { seed: number; on: ArmResult; off: ArmResult }[];
  /** `groupSize` of (b)'s arms. */
  dynamicSamplingGroupSize: number;
  /** GRPO steps of (b)'s arms (from the RL teacher). */
  dynamicSamplingSteps: number;
  /** (c) The same run with a soft length penalty (`overlong`). */
  lengthPenalty: ArmResult;
  lengthPenaltySettings: { maxLength: number; bufferLength: number; penaltyFactor: number };
  /** (d) Accuracy of the RL teacher with its reasoning cut at B tokens. */
  thinkingBudget: BudgetPoint[];
};

const strip = ({ checkpoint: _checkpoint, ...rest }: ArmResult & { checkpoint: Checkpoint }) =>
  rest;

/**
 * The claims phase: GRPO arms from the SFT teacher with the teacher run's settings for
 * `claims.steps` steps — (a) the naive checker as the correctness reward (one arm per seed of
 * `claims.hackingSeeds`; its control, with its own warm-start mix, once), (c) a soft length penalty (core's length shaping through `GrpoConfig.overlong`, penalty
 * from `claims.lengthPenaltyOnset` tokens on, reaching `claims.lengthPenaltyFactor` at `maxNewTokens`) — and (d) the RL
 * teacher's thinking-budget curve on the held-out prompts; (b) continues the RL teacher with
 * dynamic sampling on and off at `claims.dynamicSamplingGroupSize` samples per prompt for
 * `claims.dynamicSamplingSteps` steps, one pair per seed of `claims.dynamicSamplingSeeds`
 * (late training, where most groups are all-correct). (e), length growing with accuracy,
 * reads the teacher run's own held-out checks. The control of (c) (and of (a) without its own
 * warm-start mix) is the teacher run's held-out check at the same step.
 */
export async function runClaims(
  context: ArmContext & { rlTeacher: Checkpoint; hackingTeacher?: Checkpoint },
): Promise<ClaimsResult> {
  const { config, hackingTeacher } = context;
  const heldOut = context.heldOut.slice(0, config.grpo.evalPrompts);
  const from = hackingTeacher === undefined ? {} : { from: hackingTeacher };
  const naiveReward: ClaimsResult['naiveReward'] = [];
  let hacking: ClaimsResult['hacking'] | undefined;
  for (let index = 0; index < config.claims.hackingSeeds; index++) {
    const seed = config.seed + index;
    const name = index === 0 ? 'naive-reward' : `naive-reward-seed${seed}`;
    const naive = await runArm(context, name, { reward: 'naive', seed, ...from });
    if (index === 0) {
      hacking = await transcripts(context.runtime, naive.checkpoint, heldOut, {
        maxNewTokens: config.maxNewTokens,
        seed: config.seed + 11,
        samples: 2,
      });
    }
    naiveReward.push({ seed, arm: strip(naive) });
  }
  const hackingControl =
    hackingTeacher === undefined
      ? undefined
      : await runArm(context, 'hacking-control', { reward: 'robust', ...from });
  const groupSize = config.claims.dynamicSamplingGroupSize;
  // the run's filter settings when it has them, else the trainer's defaults (`true`)
  const on = config.grpo.dynamicSampling || true;
  const dynamicSampling: ClaimsResult['dynamicSampling'] = [];
  for (let pair = 0; pair < config.claims.dynamicSamplingSeeds; pair++) {
    const seed = config.seed + pair;
    const arm = async (name: string, setting: typeof on | false) =>
      strip(
        await runArm(context, `${name}-seed${seed}`, {
          overrides: { groupSize, dynamicSampling: setting },
          from: context.rlTeacher,
          seed,
          steps: config.claims.dynamicSamplingSteps,
        }),
      );
    const onArm = await arm('dynamic-sampling', on);
    dynamicSampling.push({ seed, on: onArm, off: await arm('no-dynamic-sampling', false) });
  }
  const lengthPenaltySettings = {
    maxLength: config.maxNewTokens,
    bufferLength: config.maxNewTokens - config.claims.lengthPenaltyOnset,
    penaltyFactor: config.claims.lengthPenaltyFactor,
  };
  const lengthPenalty = await runArm(context, 'length-penalty', {
    overrides: { overlong: lengthPenaltySettings },
  });
  context.log('[claims] thinking-budget sweep of the RL teacher');
  const thinkingBudget = await thinkingBudgetCurve(context.runtime, context.rlTeacher, heldOut, {
    maxNewTokens: config.maxNewTokens,
    seed: config.seed + 13,
    samples: 4,
  });
  return {
    steps: claimSteps(config),
    naiveReward,
    ...(hackingControl === undefined ? {} : { hackingControl: strip(hackingControl) }),
    hackingWarmStart:
      hackingTeacher === undefined
        ? { hedgeRate: config.warmStart.hedgeRate, hedgeMaxExtra: config.warmStart.hedgeMaxExtra }
        : config.claims.hackingWarmStart,
    hacking: hacking!,
    dynamicSampling,
    dynamicSamplingGroupSize: groupSize,
    dynamicSamplingSteps: config.claims.dynamicSamplingSteps,
    lengthPenalty: strip(lengthPenalty),
    lengthPenaltySettings,
    thinkingBudget,
  };
}
