/**
 * The policy-loss variants of issue #33 on the app's task, next to DAPO: per seed, the app's SFT
 * teacher (its default config's warm-start), then `grpo.maxSteps`-step GRPO arms from it with the
 * run's settings — DAPO as the app runs it (token-mean, clip-higher 0.28, dynamic sampling, k3
 * β 0.001) — each with one change; same seed (data order, sampling), same budget (steps, prompts
 * per step, group size). At μ = 1 with one update per step every policy term is −A (ratio 1),
 * so the loss modes are compared with 4 updates per generation batch (`miniBatchSize` 32 of the
 * 128 samples), against DAPO with the same 4 updates; the high-entropy selection acts on-policy
 * too and runs at the app's own setting.
 *
 *   pnpm --filter @rlvr/teacher-student bench:loss-variants
 *   BENCH_SEEDS=1,2,3 BENCH_ARMS=dapo,dapo-mb4,cispo-mb4,cispo-clip-mb4,sapo-mb4,top-entropy-0.2 BENCH_OUT=… pnpm …
 *
 * Prints one row per arm and seed: held-out sampled pass@1 (128 prompts × 8 samples, temperature
 * 1, fixed seed) and greedy accuracy before and after, the training accuracy of the last fifth of
 * the steps, the mean clip fraction and the wall time; writes the rows to `BENCH_OUT/results.json`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GrpoConfig } from '@rlvr/trainer';
import { checkRun } from '../src/check-run.js';
import { DEFAULT_CONFIG } from '../src/config.js';
import { runGrpo } from '../src/grpo.js';
import { warmStartModel, warmStartSequences } from '../src/run.js';

const ARMS: Record<string, Partial<GrpoConfig>> = {
  dapo: {},
  'dapo-mb4': { miniBatchSize: 32 },
  // MiniMax-M1: no lower bound; TRL / ScaleRL's ε_max 5 (the weight's cap)
  'cispo-mb4': { miniBatchSize: 32, lossMode: 'cispo', epsilonLow: 1, epsilonHigh: 4 },
  // verl's default bounds (its clip_ratio_low / high): the app's ε 0.2 / 0.28
  'cispo-clip-mb4': { miniBatchSize: 32, lossMode: 'cispo' },
  // SAPO reads no ε: the app's epsilonLow / epsilonHigh are dropped for this arm (below)
  'sapo-mb4': { miniBatchSize: 32, lossMode: 'sapo' },
  'top-entropy-0.2': { topEntropyQuantile: 0.2 },
};

const list = (value: string | undefined, fallback: string[]) =>
  value === undefined || value === '' ? fallback : value.split(',').map((item) => item.trim());
const seeds = list(process.env.BENCH_SEEDS, ['1']).map(Number);
const arms = list(process.env.BENCH_ARMS, Object.keys(ARMS));
for (const arm of arms) {
  if (!(arm in ARMS))
    throw new Error(`BENCH_ARMS: unknown arm '${arm}' (${Object.keys(ARMS).join(', ')})`);
}
const outDir = process.env.BENCH_OUT ?? join(tmpdir(), `rlvr-loss-variants-${process.pid}`);
const log = (line: string) => console.error(line);
const pct = (value: number) => `${(100 * value).toFixed(1)}%`;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);

type Row = {
  seed: number;
  arm: string;
  sampledBefore: number;
  sampledAfter: number;
  greedyBefore: number;
  greedyAfter: number;
  trainAccuracyLastFifth: number;
  clipFraction: number;
  seconds: number;
};
const rows: Row[] = [];

for (const seed of seeds) {
  const checked = await checkRun({ ...DEFAULT_CONFIG, seed, outDir });
  const { config } = checked;
  log(`[seed ${seed}] warm-start teacher (${config.warmStart.steps} SFT steps)`);
  const sft = await warmStartModel(
    checked,
    config.teacher,
    'teacher',
    warmStartSequences(checked, config.warmStart),
    'silent',
  );
  for (const arm of arms) {
    const overrides = ARMS[arm]!;
    const grpo =
      overrides.lossMode === 'sapo'
        ? (({ epsilonLow: _low, epsilonHigh: _high, ...rest }) => rest)(config.grpo)
        : config.grpo;
    const result = await runGrpo({
      runtime: checked.runtime,
      checkpoint: sft.checkpoint,
      train: checked.splits.train,
      heldOut: checked.splits.eval,
      config: grpo,
      maxSteps: config.grpo.maxSteps,
      maxNewTokens: config.maxNewTokens,
      seed,
      outputDir: join(outDir, `seed${seed}`, arm),
      label: `${arm} seed ${seed}`,
      overrides,
      log,
    });
    const last = result.history.at(-1)!.heldOut!;
    const fifth = result.history.slice(-Math.max(1, Math.floor(result.history.length / 5)));
    const row: Row = {
      seed,
      arm,
      sampledBefore: result.initialHeldOut.sampledAccuracy,
      sampledAfter: last.sampledAccuracy,
      greedyBefore: result.initialHeldOut.greedyAccuracy,
      greedyAfter: last.greedyAccuracy,
      trainAccuracyLastFifth: mean(fifth.map((record) => record.robustAccuracy)),
      clipFraction: mean(result.history.map((record) => record.clipFraction)),
      seconds: result.timeMs / 1000,
    };
    rows.push(row);
    log(
      `[seed ${seed}] ${arm}: held-out pass@1 ${pct(row.sampledBefore)} → ${pct(row.sampledAfter)}, greedy ${pct(row.greedyBefore)} → ${pct(row.greedyAfter)}, ${row.seconds.toFixed(0)} s`,
    );
  }
}

await mkdir(outDir, { recursive: true });
await writeFile(join(outDir, 'results.json'), `${JSON.stringify(rows, null, 2)}\n`);
console.log(
  '| seed | arm | held-out pass@1 (sampled) | greedy | train acc. (last fifth) | clip fraction | time s |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const row of rows) {
  console.log(
    `| ${row.seed} | ${row.arm} | ${pct(row.sampledBefore)} → ${pct(row.sampledAfter)} | ${pct(row.greedyBefore)} → ${pct(row.greedyAfter)} | ${pct(row.trainAccuracyLastFifth)} | ${row.clipFraction.toFixed(4)} | ${row.seconds.toFixed(0)} |`,
  );
}
if (seeds.length > 1) {
  for (const arm of arms) {
    const mine = rows.filter((row) => row.arm === arm);
    console.log(
      `| mean | ${arm} | ${pct(mean(mine.map((row) => row.sampledAfter)))} | ${pct(mean(mine.map((row) => row.greedyAfter)))} | ${pct(mean(mine.map((row) => row.trainAccuracyLastFifth)))} | ${mean(mine.map((row) => row.clipFraction)).toFixed(4)} | |`,
    );
  }
}
console.error(`results: ${join(outDir, 'results.json')}`);
