/**
 * The smallest honest end-to-end GRPO run: a tabular softmax policy over digit tokens learns to
 * answer "a+b=" with the two digits of a+b, from a verifiable 0/1 reward only. Every piece of RL
 * math comes from @rlvr/core: seeded RNG, group advantages, dynamic-sampling filter, the clipped
 * objective with KL to a frozen reference, its gradient, and pass@k / maj@k.
 *
 * The "model" is a table of logits[prompt][position][digit]; the gradient of a token's logprob
 * with respect to its logits is (onehot − softmax), so the chain rule through core's
 * `gradLogprobs` is exact and no autodiff is needed.
 */
import {
  createRng,
  filterGroups,
  groupAdvantages,
  logSoftmax,
  majAtK,
  passAtK,
  policyLoss,
  type Rng,
} from '@rlvr/core';

export type TabularGrpoOptions = {
  seed?: number;
  steps?: number;
  groupSize?: number;
  promptsPerStep?: number;
  learningRate?: number;
  klCoefficient?: number;
  /** PPO epochs per generation batch (μ). */
  numIterations?: number;
  onStep?: (record: StepRecord) => void;
};

export type StepRecord = {
  step: number;
  rewardMean: number;
  fracRewardZeroStd: number;
  keptGroups: number;
  loss: number;
  kl: number;
  clipRatio: number;
};

export type EvalRecord = { passAt1: number; passAt8: number; majAt8: number };

const DIGITS = 10;
const POSITIONS = 2;

type Policy = Float64Array[][]; // [prompt][position] → logits over 10 digits

function promptsOf(): [number, number][] {
  const prompts: [number, number][] = [];
  for (let a = 0; a < 10; a++) for (let b = 0; b < 10; b++) prompts.push([a, b]);
  return prompts;
}

function target(prompt: [number, number]): [number, number] {
  const sum = prompt[0] + prompt[1];
  return [Math.floor(sum / 10), sum % 10];
}

function sample(
  policy: Policy,
  promptIndex: number,
  rng: Rng,
): { tokens: number[]; logprobs: number[] } {
  const tokens: number[] = [];
  const logprobs: number[] = [];
  for (let position = 0; position < POSITIONS; position++) {
    const logProbabilities = logSoftmax(policy[promptIndex]![position]!);
    const token = rng.categorical(Array.from(logProbabilities, Math.exp));
    tokens.push(token);
    logprobs.push(logProbabilities[token]!);
  }
  return { tokens, logprobs };
}

function logprobsOf(policy: Policy, promptIndex: number, tokens: number[]): number[] {
  return tokens.map((token, position) => logSoftmax(policy[promptIndex]![position]!)[token]!);
}

/** pass@1 (mean@8), pass@8 and exact maj@8 over all prompts, from 8 samples each. */
export function evaluate(policy: Policy, rng: Rng): EvalRecord {
  const prompts = promptsOf();
  let passAt1 = 0;
  let passAt8 = 0;
  let majAt8 = 0;
  prompts.forEach((prompt, promptIndex) => {
    const answers = Array.from({ length: 8 }, () =>
      sample(policy, promptIndex, rng).tokens.join(''),
    );
    const gold = target(prompt).join('');
    const correct = answers.filter((answer) => answer === gold).length;
    passAt1 += correct / 8;
    passAt8 += passAtK(8, correct, 8);
    const clusters = [...new Set(answers)];
    majAt8 += majAtK({
      clusterSizes: clusters.map((answer) => answers.filter((a) => a === answer).length),
      correctCluster: clusters.indexOf(gold),
      k: 8,
    });
  });
  return {
    passAt1: passAt1 / prompts.length,
    passAt8: passAt8 / prompts.length,
    majAt8: majAt8 / prompts.length,
  };
}

/** Runs GRPO and returns the evaluation before and after training. */
export function runTabularGrpo(options: TabularGrpoOptions = {}): {
  before: EvalRecord;
  after: EvalRecord;
  history: StepRecord[];
} {
  const {
    seed = 0,
    steps = 600,
    groupSize = 8,
    promptsPerStep = 16,
    learningRate = 4,
    klCoefficient = 0.001,
    numIterations = 2,
  } = options;
  const rng = createRng(seed);
  const init = rng.split();
  const prompts = promptsOf();
  const policy: Policy = prompts.map(() =>
    Array.from({ length: POSITIONS }, () =>
      Float64Array.from({ length: DIGITS }, () => init.nextNormal() * 0.1),
    ),
  );
  const reference: Policy = policy.map((rows) => rows.map((row) => Float64Array.from(row)));
  const before = evaluate(policy, rng.derive('eval-before'));
  const history: StepRecord[] = [];

  for (let step = 0; step < steps; step++) {
    const batch = Array.from({ length: promptsPerStep }, () => rng.nextInt(prompts.length));
    // 1. Sample G completions per prompt with behaviour logprobs.
    const samples = batch.flatMap((promptIndex) =>
      Array.from({ length: groupSize }, () => ({
        promptIndex,
        ...sample(policy, promptIndex, rng),
      })),
    );
    // 2. Verifiable reward: 1 when both digits are right, 0.25 per right digit otherwise
    //    (the partial credit keeps groups from being all-zero at the start).
    const rewards = samples.map((s) => {
      const [tens, units] = target(prompts[s.promptIndex]!);
      const right = (s.tokens[0] === tens ? 1 : 0) + (s.tokens[1] === units ? 1 : 0);
      return right === 2 ? 1 : right * 0.25;
    });
    // 3. Dynamic sampling: keep groups with signal.
    const grouped = batch.map((_, g) => rewards.slice(g * groupSize, (g + 1) * groupSize));
    const filter = filterGroups(grouped);
    const kept = filter.keptIndices.flatMap((g) =>
      Array.from({ length: groupSize }, (_, i) => g * groupSize + i),
    );
    const record: StepRecord = {
      step,
      rewardMean: rewards.reduce((a, b) => a + b, 0) / rewards.length,
      fracRewardZeroStd: filter.fracRewardZeroStd,
      keptGroups: filter.counts.kept,
      loss: 0,
      kl: 0,
      clipRatio: 0,
    };
    if (kept.length > 0) {
      // 4. Group-relative advantages (GRPO).
      const { advantages } = groupAdvantages(
        kept.map((index) => rewards[index]!),
        { groupSize },
      );
      const keptSamples = kept.map((index) => samples[index]!);
      const oldLogprobs = keptSamples.map((s) => s.logprobs);
      const refLogprobs = keptSamples.map((s) => logprobsOf(reference, s.promptIndex, s.tokens));
      // 5. μ PPO epochs on the same batch with the clipped objective and k3 KL.
      for (let iteration = 0; iteration < numIterations; iteration++) {
        const logprobs = keptSamples.map((s) => logprobsOf(policy, s.promptIndex, s.tokens));
        const result = policyLoss({
          logprobs,
          oldLogprobs,
          advantages,
          refLogprobs,
          klCoefficient,
          epsilonLow: 0.2,
          epsilonHigh: 0.28,
          aggregation: 'token-mean',
        });
        // d loss / d logits = d loss / d logp · (onehot − softmax)
        keptSamples.forEach((s, row) => {
          s.tokens.forEach((token, position) => {
            const gradient = result.gradLogprobs[row]![position]!;
            if (gradient === 0) return;
            const logits = policy[s.promptIndex]![position]!;
            const probabilities = Array.from(logSoftmax(logits), Math.exp);
            for (let digit = 0; digit < DIGITS; digit++) {
              const dLogp = (digit === token ? 1 : 0) - probabilities[digit]!;
              logits[digit] = logits[digit]! - learningRate * gradient * dLogp;
            }
          });
        });
        record.loss = result.loss;
        record.kl = result.metrics.kl;
        record.clipRatio = result.metrics.clipRatioRegion;
      }
    }
    history.push(record);
    options.onStep?.(record);
  }
  const after = evaluate(policy, rng.derive('eval-after'));
  return { before, after, history };
}
