import type { GrpoStepRecord, HeldOutCheck } from '../grpo.js';
import type { ArmResult } from './arms.js';
import type { ClaimsResult } from './index.js';

/** One row of the targets table: a claim, its threshold, the measured value. */
export type Target = {
  name: string;
  goal: string;
  value: number;
  unit: string;
  met: boolean;
  /** The numbers behind the value, in words. */
  detail?: string;
};

type Run = { history: GrpoStepRecord[]; initialHeldOut?: HeldOutCheck };

const meanOf = (values: number[]) =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
/**
 * The largest held-out sampled pass@1 loss (points) on the easy half of the prompts at which (c)
 * still counts as "no loss": about one binomial standard error of the difference of two arms'
 * pass@1 on a half of the default held-out set (64 prompts × 8 samples each, p ≈ 0.8: ≈ 2.5).
 */
export const LENGTH_PENALTY_EASY_MAX_COST = 2;

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;

/** Mean of a training metric over the first and last fifth of a run. */
function firstLast(history: GrpoStepRecord[], pick: (record: GrpoStepRecord) => number) {
  const count = Math.max(1, Math.floor(history.length / 5));
  return [
    meanOf(history.slice(0, count).map(pick)),
    meanOf(history.slice(-count).map(pick)),
  ] as const;
}

/** The held-out check of a run at a step (or its last one). */
export function checkAt(run: Run, step?: number): HeldOutCheck | undefined {
  const records = run.history.filter(
    (record) => record.heldOut !== undefined && (step === undefined || record.step <= step),
  );
  return records.at(-1)?.heldOut;
}

const EMPTY: HeldOutCheck = {
  sampledAccuracy: 0,
  greedyAccuracy: 0,
  meanLength: 0,
  hedgeRate: 0,
  restateRate: 0,
  byTerms: [],
};

/** (e) Length grows with accuracy during the teacher's GRPO (held-out checks, first vs last). */
export function lengthGrowthTarget(teacher: Run): Target {
  const first = teacher.initialHeldOut ?? EMPTY;
  const last = checkAt(teacher) ?? EMPTY;
  const lengthGain = last.meanLength - first.meanLength;
  const accuracyGain = 100 * (last.sampledAccuracy - first.sampledAccuracy);
  const hardest = (check: HeldOutCheck) => check.byTerms.at(-1);
  const hardFirst = hardest(first);
  const hardLast = hardest(last);
  return {
    name: 'length grows with accuracy (RL)',
    goal: 'teacher GRPO: held-out mean length +≥1 token and sampled pass@1 +≥5 points',
    value: lengthGain,
    unit: 'tokens',
    met: lengthGain >= 1 && accuracyGain >= 5,
    detail: `length ${first.meanLength.toFixed(1)} → ${last.meanLength.toFixed(1)} tokens, sampled pass@1 ${pct(first.sampledAccuracy)} → ${pct(last.sampledAccuracy)}${hardFirst && hardLast ? `; ${hardLast.terms}-term prompts: length ${hardFirst.meanLength.toFixed(1)} → ${hardLast.meanLength.toFixed(1)}, pass@1 ${pct(hardFirst.sampledAccuracy)} → ${pct(hardLast.sampledAccuracy)}` : ''}`,
  };
}

/** (a) for one naive-reward arm: naive-reward gain − true-accuracy gain (points) and its ends. */
function hackingGap(arm: ArmResult) {
  const [naiveFirst, naiveLast] = firstLast(arm.history, (record) => {
    // `reward/correct/mean` of the naive arm is the naive checker's verdict.
    return record.accuracy;
  });
  const [trueFirst, trueLast] = firstLast(arm.history, (record) => record.robustAccuracy);
  const gap = 100 * (naiveLast - naiveFirst - (trueLast - trueFirst));
  return { gap, naiveFirst, naiveLast, trueFirst, trueLast, check: checkAt(arm) ?? EMPTY };
}

function hackingTarget(teacher: Run, claims: ClaimsResult): Target {
  const arms = claims.naiveReward.map(({ seed, arm }) => ({ seed, ...hackingGap(arm) }));
  const gap = meanOf(arms.map((arm) => arm.gap));
  const naiveHedge = meanOf(arms.map((arm) => arm.check.hedgeRate));
  const naivePass = meanOf(arms.map((arm) => arm.check.sampledAccuracy));
  const control = claims.hackingControl ?? teacher;
  const robustCheck = checkAt(control, claims.steps) ?? EMPTY;
  const h = claims.hacking;
  const mix = claims.hackingWarmStart;
  const own = claims.hackingControl === undefined ? '' : ', both from the claim’s own SFT teacher';
  const first = arms[0]!;
  const each = arms
    .map((arm) => `seed ${arm.seed} ${signed(arm.gap)} (hedged ${pct(arm.check.hedgeRate)})`)
    .join(', ');
  return {
    name: 'reward hacking (naive checker)',
    goal: `naive-reward arms (mean of ${arms.length} GRPO seed(s)): naive-reward gain − true-accuracy gain ≥ 5 points, and more hedged held-out answers than the robust-verifier run`,
    value: gap,
    unit: 'points',
    met: gap >= 5 && naiveHedge > robustCheck.hedgeRate,
    detail: `${each}; seed ${first.seed}: naive reward ${pct(first.naiveFirst)} → ${pct(first.naiveLast)}, true accuracy ${pct(first.trueFirst)} → ${pct(first.trueLast)} (training samples, first → last fifth); held-out at step ${claims.steps}: hedged answers ${pct(naiveHedge)} (naive reward, mean) vs ${pct(robustCheck.hedgeRate)} (verifier reward), sampled pass@1 ${pct(naivePass)} vs ${pct(robustCheck.sampledAccuracy)}; the robust verifier rejected ${h.caught} of ${h.total} final held-out samples of seed ${first.seed}'s arm the naive checker accepted (${h.hedged} hedged lists); warm-start mix ${pct(mix.hedgeRate)} hedged answers of 1–${mix.hedgeMaxExtra} extra digits${own}`,
  };
}

function dynamicTarget(claims: ClaimsResult): Target {
  const zero = (history: readonly GrpoStepRecord[]) =>
    meanOf(history.map((record) => record.fracZeroStd));
  const pairs = claims.dynamicSampling.map((pair) => ({
    seed: pair.seed,
    start: pair.on.initialHeldOut.sampledAccuracy,
    on: (checkAt(pair.on) ?? EMPTY).sampledAccuracy,
    off: (checkAt(pair.off) ?? EMPTY).sampledAccuracy,
    zeroOn: zero(pair.on.history),
    zeroOff: zero(pair.off.history),
  }));
  const mean = (pick: (pair: (typeof pairs)[number]) => number) => meanOf(pairs.map(pick));
  const value = 100 * (mean((p) => p.on) - mean((p) => p.off));
  const size = claims.dynamicSamplingGroupSize;
  const steps = claims.dynamicSamplingSteps;
  const each = pairs
    .map((p) => `seed ${p.seed} ${signed(100 * (p.on - p.off))} (${pct(p.on)} vs ${pct(p.off)})`)
    .join(', ');
  return {
    name: 'dynamic sampling (zero-variance filtering)',
    goal: `RL teacher + ${steps} GRPO steps (${size} samples per prompt), held-out sampled pass@1, mean of ${pairs.length} seed pair(s): dynamic sampling on ≥ off`,
    value,
    unit: 'points',
    met: value >= 0,
    detail: `on/off pairs continuing the RL teacher (held-out ${pct(mean((p) => p.start))} before): ${each}; mean on ${pct(mean((p) => p.on))} vs off ${pct(mean((p) => p.off))}; zero-variance fraction of sampled groups ${pct(mean((p) => p.zeroOn))} (on, such groups resampled/dropped) vs ${pct(mean((p) => p.zeroOff))} (off, trained on with zero advantage)`,
  };
}

const signed = (points: number) => `${points >= 0 ? '+' : '−'}${Math.abs(points).toFixed(1)}`;

/** Sampled pass@1 and mean length over some difficulty buckets of a check (prompt-weighted). */
function bucketStats(check: HeldOutCheck, terms: ReadonlySet<number>) {
  const buckets = check.byTerms.filter((bucket) => terms.has(bucket.terms));
  const prompts = buckets.reduce((sum, bucket) => sum + bucket.prompts, 0);
  const weighted = (pick: (bucket: HeldOutCheck['byTerms'][number]) => number) =>
    prompts === 0 ? 0 : buckets.reduce((sum, b) => sum + b.prompts * pick(b), 0) / prompts;
  return {
    accuracy: weighted((bucket) => bucket.sampledAccuracy),
    length: weighted((bucket) => bucket.meanLength),
    prompts,
  };
}

/**
 * The easy half of a check's difficulties (the lower half of its operand counts, at least one)
 * and the rest, the hard half.
 */
export function difficultyHalves(check: HeldOutCheck) {
  const terms = [...new Set(check.byTerms.map((bucket) => bucket.terms))].sort((a, b) => a - b);
  const easyCount = Math.max(1, Math.floor(terms.length / 2));
  return {
    easy: new Set(terms.slice(0, easyCount)),
    hard: new Set(terms.slice(easyCount)),
  };
}

const range = (terms: ReadonlySet<number>) => {
  const sorted = [...terms].sort((a, b) => a - b);
  if (sorted.length === 0) return 'none';
  return sorted.length === 1 ? `${sorted[0]}` : `${sorted[0]}–${sorted.at(-1)}`;
};

/**
 * (c) A length penalty removes overthinking: held-out mean length ≤ 0.8× the unpenalized
 * teacher's at the same step, with no loss of sampled pass@1 on the easy half of the prompts
 * (at most {@link LENGTH_PENALTY_EASY_MAX_COST} points, the noise of a half of the held-out set);
 * what it costs on the hard half and overall is in the detail, not bounded.
 */
function lengthPenaltyTarget(teacher: Run, claims: ClaimsResult): Target {
  const free = checkAt(teacher, claims.steps) ?? EMPTY;
  const penalized = checkAt(claims.lengthPenalty) ?? EMPTY;
  const ratio = free.meanLength > 0 ? penalized.meanLength / free.meanLength : 0;
  const cost = 100 * (free.sampledAccuracy - penalized.sampledAccuracy);
  // each half of the difficulties: both runs' prompt-weighted stats and the penalty's cost
  const compare = (name: string, terms: ReadonlySet<number>) => {
    const without = bucketStats(free, terms);
    const withPenalty = bucketStats(penalized, terms);
    const halfCost = 100 * (without.accuracy - withPenalty.accuracy);
    return {
      without,
      withPenalty,
      cost: halfCost,
      text: `${name} (${range(terms)} terms): length ${withPenalty.length.toFixed(1)} vs ${without.length.toFixed(1)}, sampled pass@1 ${pct(withPenalty.accuracy)} vs ${pct(without.accuracy)} (cost ${halfCost.toFixed(1)} points)`,
    };
  };
  const halves = difficultyHalves(free);
  const easy = compare('easy', halves.easy);
  const hard = compare('hard', halves.hard);
  const settings = claims.lengthPenaltySettings;
  return {
    name: 'length penalty trades accuracy for cost',
    goal: `held-out mean length with the penalty ≤ 0.8 × without (step ${claims.steps}), at no sampled pass@1 cost on the easy half of the prompts (≤ ${LENGTH_PENALTY_EASY_MAX_COST} points)`,
    value: ratio,
    unit: '× length',
    met:
      ratio > 0 &&
      ratio <= 0.8 &&
      easy.without.prompts > 0 &&
      easy.withPenalty.prompts > 0 &&
      easy.cost <= LENGTH_PENALTY_EASY_MAX_COST,
    detail: `length ${penalized.meanLength.toFixed(1)} vs ${free.meanLength.toFixed(1)} tokens, sampled pass@1 ${pct(penalized.sampledAccuracy)} vs ${pct(free.sampledAccuracy)} (cost ${cost.toFixed(1)} points), greedy ${pct(penalized.greedyAccuracy)} vs ${pct(free.greedyAccuracy)}; ${easy.text}; ${hard.text}; completions that restate the question ${pct(penalized.restateRate)} vs ${pct(free.restateRate)} (${pct(teacher.initialHeldOut?.restateRate ?? 0)} before RL) (penalty ${settings.penaltyFactor} at ${settings.maxLength} tokens, from ${settings.maxLength - settings.bufferLength} tokens on)`,
  };
}

function budgetTarget(claims: ClaimsResult): Target {
  const curve = claims.thinkingBudget;
  const none = curve[0]?.accuracy ?? 0;
  const full = curve.at(-1)?.accuracy ?? 0;
  const value = 100 * (full - none);
  return {
    name: 'accuracy scales with thinking budget',
    goal: 'RL teacher held-out accuracy at the full reasoning budget ≥ at B = 0 + 10 points',
    value,
    unit: 'points',
    met: value >= 10,
    detail: curve
      .map((point) => `B=${point.budget}: ${pct(point.accuracy)} (${point.tokens.toFixed(1)} tok)`)
      .join(', '),
  };
}

/** The claims' rows of the targets table; (a)–(d) only when the claims phase ran. */
export function claimTargets(teacher: Run, claims: ClaimsResult | undefined): Target[] {
  const rows = [lengthGrowthTarget(teacher)];
  if (claims === undefined) return rows;
  return [
    hackingTarget(teacher, claims),
    dynamicTarget(claims),
    lengthPenaltyTarget(teacher, claims),
    budgetTarget(claims),
    ...rows,
  ];
}

export type { ArmResult };
