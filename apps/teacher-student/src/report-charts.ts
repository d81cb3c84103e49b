import { CHART_COLORS, type ChartSeries, lineChart } from '@rlvr/report';
import type { ClaimsResult } from './claims/index.js';
import { checkAt } from './claims/targets.js';
import type { GrpoStepRecord, HeldOutCheck } from './grpo.js';
import type { Report } from './report.js';

type Point = [number, number];
const color = (index: number) => CHART_COLORS[index % CHART_COLORS.length]!;
/** EMA weight of the per-step training curves (raw drawn faint behind). */
const SMOOTHING = 0.6;

const series = (
  name: string,
  index: number,
  history: readonly GrpoStepRecord[],
  pick: (record: GrpoStepRecord) => number | undefined,
  options: { dashed?: boolean; x?: (record: GrpoStepRecord) => number } = {},
): ChartSeries => ({
  name,
  color: color(index),
  dashed: options.dashed ?? false,
  points: history
    .map((record) => [options.x ? options.x(record) : record.step, pick(record)] as const)
    .filter((entry): entry is Point => entry[1] !== undefined && Number.isFinite(entry[1])),
});

/** Held-out checks of a run as `[step, value]`, starting with the check before step 1. */
const checks = (
  run: { history: readonly GrpoStepRecord[]; initialHeldOut?: HeldOutCheck },
  pick: (check: HeldOutCheck) => number | undefined,
): Point[] =>
  [
    ...(run.initialHeldOut ? [[0, pick(run.initialHeldOut)] as const] : []),
    ...run.history
      .filter((record) => record.heldOut !== undefined)
      .map((record) => [record.step, pick(record.heldOut!)] as const),
  ].filter((entry): entry is Point => entry[1] !== undefined && Number.isFinite(entry[1]));

/** The mean of several runs' points at the x values they all have. */
function meanPoints(lists: readonly Point[][]): Point[] {
  const [first, ...rest] = lists;
  if (first === undefined) return [];
  return first.flatMap(([x, y]) => {
    const others = rest.map((list) => list.find((point) => point[0] === x));
    if (others.some((point) => point === undefined)) return [];
    const sum = others.reduce((total, point) => total + point![1], y);
    return [[x, sum / lists.length] as Point];
  });
}

const zeroStd = (history: readonly GrpoStepRecord[]): Point[] =>
  history.map((record) => [record.step, record.fracZeroStd] as Point);

const lossCurve = (losses: readonly number[]): Point[] =>
  losses.map((loss, index) => [index + 1, loss]);

/** The two GRPO runs of the main phases, one chart each so each has its own x-range. */
function perRunEntries(report: Report) {
  return [
    { suffix: '', name: 'teacher', run: report.grpo.teacher, color: 0, dashed: false },
    {
      suffix: '-student',
      name: 'RL-only student',
      run: report.grpo.student,
      color: 3,
      dashed: true,
    },
  ];
}

/**
 * A per-step GRPO metric as one chart per run — `${id}` for the teacher (30 steps) and
 * `${id}-student` for the RL-only student (180 steps) — so neither is squeezed onto the other's axis.
 */
export function perRunCharts(
  report: Report,
  id: string,
  title: string,
  yLabel: string,
  pick: (record: GrpoStepRecord) => number | undefined,
  extra: { yMin?: number; yMax?: number } = {},
): string[] {
  return perRunEntries(report).map((entry) =>
    lineChart({
      id: `${id}${entry.suffix}`,
      title: `${title} (${entry.name})`,
      xLabel: 'GRPO step',
      yLabel,
      smoothing: SMOOTHING,
      ...extra,
      series: [series(entry.name, entry.color, entry.run.history, pick, { dashed: entry.dashed })],
    }),
  );
}

/** Charts of the main run's training: losses, GRPO optimizer signals, held-out checks. */
export function trainingCharts(report: Report): string[] {
  const runs = perRunEntries(report);
  return [
    lineChart({
      id: 'sft-loss',
      title: 'Warm-start (SFT) loss',
      xLabel: 'SFT step',
      yLabel: 'nats / token',
      smoothing: SMOOTHING,
      yMin: 0,
      series: [
        { name: 'teacher', color: color(0), points: lossCurve(report.warmStart.teacher.losses) },
        { name: 'student', color: color(3), points: lossCurve(report.warmStart.student.losses) },
      ],
    }),
    lineChart({
      id: 'distill-loss',
      title: 'Distillation loss (student on verified teacher traces)',
      xLabel: 'distillation step',
      yLabel: 'nats / token',
      smoothing: SMOOTHING,
      yMin: 0,
      series: [{ name: 'student', color: color(3), points: lossCurve(report.distill.losses) }],
    }),
    ...runs.map((entry) =>
      lineChart({
        id: `held-out-sampled${entry.suffix}`,
        title: `Held-out sampled pass@1 during GRPO (${entry.name})`,
        xLabel: 'GRPO step',
        yLabel: 'accuracy (temperature 1)',
        yMin: 0,
        yMax: 1,
        series: [
          {
            name: entry.name,
            color: color(entry.color),
            dashed: entry.dashed,
            points: checks(entry.run, (c) => c.sampledAccuracy),
          },
        ],
      }),
    ),
    ...runs.map((entry) =>
      lineChart({
        id: `reward-wall${entry.suffix}`,
        title: `GRPO reward against wall-clock time (${entry.name})`,
        xLabel: 'seconds since the phase started',
        yLabel: 'mean reward',
        smoothing: SMOOTHING,
        yMin: 0,
        series: [
          series(entry.name, entry.color, entry.run.history, (r) => r.reward, {
            dashed: entry.dashed,
            x: (r) => r.elapsedMs / 1000,
          }),
        ],
      }),
    ),
    ...perRunCharts(report, 'grpo-loss', 'GRPO loss', 'loss', (r) => r.loss),
    ...perRunCharts(
      report,
      'grad-norm',
      'Gradient norm (before clipping)',
      'L2 norm',
      (r) => r.gradNorm,
      {
        yMin: 0,
      },
    ),
    ...perRunCharts(
      report,
      'clip-fraction',
      'Clipped token fraction',
      'fraction',
      (r) => r.clipFraction,
      {
        yMin: 0,
      },
    ),
    ...perRunCharts(report, 'learning-rate', 'Learning rate', 'lr', (r) => r.learningRate, {
      yMin: 0,
    }),
  ];
}

/** (e) The teacher's held-out length and sampled pass@1 per difficulty over GRPO steps. */
export function growthCharts(report: Report): string[] {
  const teacher = report.grpo.teacher;
  const terms = [
    ...new Set((teacher.initialHeldOut?.byTerms ?? []).map((bucket) => bucket.terms)),
  ].sort((a, b) => a - b);
  const byTerms = (pick: (bucket: HeldOutCheck['byTerms'][number]) => number) =>
    terms.map((count, index) => ({
      name: `${count} terms`,
      color: color(index),
      points: checks(teacher, (check) => {
        const bucket = check.byTerms.find((entry) => entry.terms === count);
        return bucket === undefined ? undefined : pick(bucket);
      }),
    }));
  return [
    lineChart({
      id: 'length-by-difficulty',
      title: 'Held-out response length during GRPO, by difficulty',
      xLabel: 'GRPO step',
      yLabel: 'mean tokens (sampled)',
      yMin: 0,
      series: byTerms((bucket) => bucket.meanLength),
    }),
    lineChart({
      id: 'accuracy-by-difficulty',
      title: 'Held-out sampled pass@1 during GRPO, by difficulty',
      xLabel: 'GRPO step',
      yLabel: 'accuracy',
      yMin: 0,
      yMax: 1,
      series: byTerms((bucket) => bucket.sampledAccuracy),
    }),
  ];
}

/**
 * (c) by difficulty: held-out sampled pass@1 and mean length per number of terms at the compared
 * step, with and without the penalty (the row compares the easy half and reports the hard half).
 */
function lengthPenaltyByDifficulty(teacher: Report['grpo']['teacher'], claims: ClaimsResult) {
  const runs = [
    { name: 'no penalty', check: checkAt(teacher, claims.steps), index: 0 },
    { name: 'length penalty', check: checkAt(claims.lengthPenalty), index: 1 },
  ];
  const pair = (pick: (bucket: HeldOutCheck['byTerms'][number]) => number) =>
    runs.map(({ name, check, index }) => ({
      name,
      color: color(index),
      points: (check?.byTerms ?? []).map((bucket) => [bucket.terms, pick(bucket)] as Point),
    }));
  return [
    lineChart({
      id: 'length-penalty-by-difficulty',
      title: `Length penalty by difficulty: held-out pass@1 (step ${claims.steps})`,
      xLabel: 'terms in the chain',
      yLabel: 'sampled pass@1',
      yMin: 0,
      yMax: 1,
      series: pair((bucket) => bucket.sampledAccuracy),
    }),
    lineChart({
      id: 'length-penalty-length-by-difficulty',
      title: `Length penalty by difficulty: held-out length (step ${claims.steps})`,
      xLabel: 'terms in the chain',
      yLabel: 'mean tokens (sampled)',
      yMin: 0,
      series: pair((bucket) => bucket.meanLength),
    }),
  ];
}

/** (a)–(d): the claims phase's charts (none when it did not run). */
export function claimCharts(report: Report): string[] {
  const claims = report.claims;
  if (claims === undefined) return [];
  const teacher = {
    ...report.grpo.teacher,
    history: report.grpo.teacher.history.filter((record) => record.step <= claims.steps),
  };
  // the per-step chart and the transcripts are the first arm's (the run's seed); held-out: the mean
  const { seed: firstSeed, arm: naive } = claims.naiveReward[0]!;
  const naiveArms = claims.naiveReward.map(({ arm }) => arm);
  const armsNote = naiveArms.length === 1 ? '' : ` (mean of ${naiveArms.length} seeds)`;
  // (a)'s control: its own verifier-rewarded run when the claim has its own warm-start mix
  const hackingControl = claims.hackingControl ?? teacher;
  const pairs = claims.dynamicSampling;
  const rlTeacher = report.evaluation.find((entry) => entry.name === 'RL teacher');
  return [
    lineChart({
      id: 'reward-hacking',
      title: `Reward hacking: GRPO rewarded by a naive checker (seed ${firstSeed})`,
      xLabel: 'GRPO step',
      yLabel: 'fraction (training)',
      smoothing: SMOOTHING,
      yMin: 0,
      yMax: 1,
      series: [
        series('naive reward', 1, naive.history, (r) => r.accuracy),
        series('true accuracy (verifier)', 0, naive.history, (r) => r.robustAccuracy),
        series('hedged answers', 4, naive.history, (r) => r.hedgeRate, { dashed: true }),
      ],
    }),
    lineChart({
      id: 'reward-hacking-held-out',
      title: `Held-out: naive vs verifier reward${armsNote}`,
      xLabel: 'GRPO step',
      yLabel: 'fraction (sampled)',
      yMin: 0,
      yMax: 1,
      series: [
        {
          name: 'pass@1, naive reward',
          color: color(1),
          points: meanPoints(naiveArms.map((arm) => checks(arm, (c) => c.sampledAccuracy))),
        },
        {
          name: 'pass@1, verifier reward',
          color: color(0),
          points: checks(hackingControl, (c) => c.sampledAccuracy),
        },
        {
          name: 'hedged, naive reward',
          color: color(1),
          dashed: true,
          points: meanPoints(naiveArms.map((arm) => checks(arm, (c) => c.hedgeRate))),
        },
        {
          name: 'hedged, verifier reward',
          color: color(0),
          dashed: true,
          points: checks(hackingControl, (c) => c.hedgeRate),
        },
      ],
    }),
    lineChart({
      id: 'dynamic-sampling',
      title: `Dynamic sampling on / off (RL teacher, G ${claims.dynamicSamplingGroupSize}, ${pairs.length} seed pair${pairs.length === 1 ? '' : 's'})`,
      xLabel: 'GRPO step after the RL teacher',
      yLabel: 'fraction',
      yMin: 0,
      yMax: 1,
      series: [
        {
          name: 'held-out pass@1, on',
          color: color(0),
          points: meanPoints(pairs.map((pair) => checks(pair.on, (c) => c.sampledAccuracy))),
        },
        {
          name: 'held-out pass@1, off',
          color: color(1),
          points: meanPoints(pairs.map((pair) => checks(pair.off, (c) => c.sampledAccuracy))),
        },
        {
          name: 'zero-variance groups, on',
          color: color(0),
          dashed: true,
          points: meanPoints(pairs.map((pair) => zeroStd(pair.on.history))),
        },
        {
          name: 'zero-variance groups, off',
          color: color(1),
          dashed: true,
          points: meanPoints(pairs.map((pair) => zeroStd(pair.off.history))),
        },
      ],
    }),
    lineChart({
      id: 'length-penalty',
      title: 'Length penalty: held-out response length',
      xLabel: 'GRPO step',
      yLabel: 'mean tokens (sampled)',
      yMin: 0,
      series: [
        { name: 'no penalty', color: color(0), points: checks(teacher, (c) => c.meanLength) },
        {
          name: 'length penalty',
          color: color(1),
          points: checks(claims.lengthPenalty, (c) => c.meanLength),
        },
      ],
    }),
    lineChart({
      id: 'length-penalty-accuracy',
      title: 'Length penalty: held-out sampled pass@1 and restated questions',
      xLabel: 'GRPO step',
      yLabel: 'fraction (sampled)',
      yMin: 0,
      yMax: 1,
      series: [
        {
          name: 'pass@1, no penalty',
          color: color(0),
          points: checks(teacher, (c) => c.sampledAccuracy),
        },
        {
          name: 'pass@1, length penalty',
          color: color(1),
          points: checks(claims.lengthPenalty, (c) => c.sampledAccuracy),
        },
        {
          name: 'restates the question, no penalty',
          color: color(0),
          dashed: true,
          points: checks(teacher, (c) => c.restateRate),
        },
        {
          name: 'restates the question, length penalty',
          color: color(1),
          dashed: true,
          points: checks(claims.lengthPenalty, (c) => c.restateRate),
        },
      ],
    }),
    ...lengthPenaltyByDifficulty(teacher, claims),
    lineChart({
      id: 'thinking-budget',
      title: 'Test-time compute: thinking budget vs voting (RL teacher)',
      xLabel: 'tokens spent per prompt (log scale)',
      yLabel: 'held-out accuracy',
      logX: true,
      yMin: 0,
      yMax: 1,
      series: [
        {
          name: 'reasoning cut at B tokens',
          color: color(0),
          points: claims.thinkingBudget.map((p) => [p.tokens, p.accuracy] as Point),
        },
        {
          name: 'maj@k (k full samples)',
          color: color(1),
          dashed: true,
          points: (rlTeacher?.curve ?? []).map(
            (p) => [p.k * (rlTeacher?.meanLength ?? 0), p.majAtK] as Point,
          ),
        },
      ],
    }),
  ];
}
