import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCheckpoint, readGguf } from '@rlvr/model';
import { findChromium, renderInChromium } from '@rlvr/report';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromArgs } from './cli.js';
import type { Report } from './report.js';
import { rewardFirstLast } from './report.js';
import { PHASES, runTeacherStudent } from './run.js';

describe('teacher-student --quick, end to end', () => {
  let outDir: string;
  let report: Report;
  let secondRun: Report;
  const lines: string[] = [];

  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'rlvr-teacher-student-'));
    const { config } = configFromArgs(['--quick', '--out', outDir]);
    report = await runTeacherStudent({
      config,
      progress: 'silent',
      log: (line) => lines.push(line),
    });
    // Re-running with the same config resumes: every phase is skipped.
    secondRun = await runTeacherStudent({
      config,
      progress: 'silent',
      log: (line) => lines.push(line),
    });
  });

  afterAll(async () => {
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('exports the distilled student as GGUF that reads back with its tokenizer', async () => {
    const parsed = await readGguf(join(outDir, 'gguf', 'distilled-student', 'model.gguf'));
    expect(parsed.metadata['general.architecture']).toBe('llama');
    expect(existsSync(join(outDir, 'gguf', 'distilled-student', 'Modelfile'))).toBe(true);
  });

  it('writes report.json with every section and the four models', () => {
    const json = JSON.parse(readFileSync(join(outDir, 'report.json'), 'utf8')) as Report;
    expect(json.version).toBe(1);
    expect(json.config.quick).toBe(true);
    expect(json.timings.phases.map((phase) => phase.name)).toEqual([...PHASES]);
    expect(json.evaluation.map((entry) => entry.name)).toEqual([
      'SFT teacher',
      'RL teacher',
      'distilled student',
      'RL-only student',
    ]);
    for (const evaluation of json.evaluation) {
      expect(evaluation.curve.map((point) => point.k)).toEqual([1, 2, 4, 8, 16]);
      for (const point of evaluation.curve) {
        expect(point.passAtK).toBeGreaterThanOrEqual(0);
        expect(point.passAtK).toBeLessThanOrEqual(1);
        expect(point.majAtK).toBeGreaterThanOrEqual(0);
        expect(point.majAtK).toBeLessThanOrEqual(1);
      }
      // pass@k is non-decreasing in k.
      const pass = evaluation.curve.map((point) => point.passAtK);
      for (let index = 1; index < pass.length; index++) {
        expect(pass[index]!).toBeGreaterThanOrEqual(pass[index - 1]! - 1e-12);
      }
      expect(evaluation.examples.length).toBeGreaterThan(0);
    }
    expect(json.models.studentToTeacherRatio).toBeLessThanOrEqual(0.25);
    expect(json.grpo.teacher.history.length).toBe(json.config.grpo.maxSteps);
    expect(json.grpo.student.history.length).toBeGreaterThan(0);
    expect(json.distill.kept).toBeGreaterThan(0);
    expect(json.targets.map((target) => target.name)).toEqual([
      'GRPO gain',
      'distillation retention',
      'distillation vs RL on the student',
      'test-time compute',
      'run time',
      'reward hacking (naive checker)',
      'dynamic sampling (zero-variance filtering)',
      'length penalty trades accuracy for cost',
      'accuracy scales with thinking budget',
      'length grows with accuracy (RL)',
    ]);
    for (const target of json.targets) {
      expect(Number.isFinite(target.value), target.name).toBe(true);
      expect(target.unit.length, target.name).toBeGreaterThan(0);
    }
    // The RL-only student's budget is in steps (reproducible), not wall-clock.
    expect(json.grpo.student.history).toHaveLength(json.config.grpo.studentSteps);
    // Every claim arm ran its steps and has held-out checks (sampled pass@1, length by difficulty).
    const claims = json.claims!;
    // (b) continues the RL teacher with on/off pairs at 4 samples per prompt, one per seed
    expect(claims.dynamicSamplingGroupSize).toBe(4);
    expect(claims.dynamicSampling.map((pair) => pair.seed)).toEqual([
      json.config.seed,
      json.config.seed + 1,
      json.config.seed + 2,
    ]);
    for (const pair of claims.dynamicSampling) {
      for (const arm of [pair.on, pair.off]) {
        expect(arm.history).toHaveLength(claims.dynamicSamplingSteps);
        expect(arm.history.at(-1)!.heldOut!.byTerms.length).toBeGreaterThan(0);
      }
    }
    expect(claims.naiveReward.map(({ seed }) => seed)).toEqual([json.config.seed]);
    for (const arm of [claims.naiveReward[0]!.arm, claims.lengthPenalty]) {
      expect(arm.history).toHaveLength(claims.steps);
      expect(arm.history.at(-1)!.heldOut!.byTerms.length).toBeGreaterThan(0);
    }
    expect(claims.thinkingBudget[0]!.budget).toBe(0);
    expect(claims.thinkingBudget.length).toBeGreaterThan(2);
    expect(claims.hacking.total).toBeGreaterThan(0);
    for (const record of json.grpo.teacher.history) {
      for (const key of [
        'reward',
        'accuracy',
        'meanLength',
        'kl',
        'entropy',
        'fracZeroStd',
      ] as const) {
        expect(Number.isFinite(record[key])).toBe(true);
      }
    }
  });

  it('learned: the teacher reward after GRPO is above the reward before, beyond noise', () => {
    const history = report.grpo.teacher.history;
    const [first, last] = rewardFirstLast(history);
    const count = Math.max(1, Math.floor(history.length / 5));
    // 3σ of the noise of a mean over count × prompts × G rewards in [0, 1 + w] (σ ≤ range / 2).
    const samples = count * report.config.grpo.promptsPerStep * report.config.grpo.groupSize;
    const noise = (1 + report.config.grpo.formatWeight) * 3 * Math.sqrt(0.25 / samples);
    expect(last - first).toBeGreaterThan(noise);
  });

  it('does not get worse on held-out prompts: RL teacher pass@1 ≥ SFT teacher pass@1', () => {
    // Directional only: over seeds 1–3 the held-out gain of this short run was +18.0, +23.0 and
    // +4.3 points, so a 3σ bound (7.7 points) would not hold for every seed; the reward check above
    // is the one with a noise margin (2.7–4.8× its bound over the same seeds).
    const passAt1 = (name: string) =>
      report.evaluation.find((entry) => entry.name === name)!.curve[0]!.passAtK;
    expect(passAt1('RL teacher')).toBeGreaterThanOrEqual(passAt1('SFT teacher'));
  });

  it('saves Hugging Face-style checkpoints with ONNX exports that load again', async () => {
    for (const name of [
      'sft-teacher',
      'rl-teacher',
      'sft-student',
      'distilled-student',
      'rl-student',
    ]) {
      const dir = join(outDir, 'checkpoints', name);
      expect(existsSync(join(dir, 'onnx', 'model.onnx'))).toBe(true);
      const checkpoint = await loadCheckpoint(dir);
      expect(checkpoint.tokenizer).toBeDefined();
    }
  });

  it('resumes: a second run with the same config skips every phase and reports the same numbers', () => {
    expect(secondRun.timings.phases.every((phase) => phase.resumed)).toBe(true);
    expect(secondRun.evaluation).toEqual(report.evaluation);
    expect(lines.filter((line) => line.includes('skipped'))).toHaveLength(PHASES.length);
  });

  const chromium = findChromium();
  it.skipIf(chromium === undefined && !process.env.CI)(
    'report.html renders in headless Chromium without console errors',
    async () => {
      expect(chromium, 'chromium must be installed in CI (see .ci/run)').toBeDefined();
      const html = readFileSync(join(outDir, 'report.html'), 'utf8');
      expect(html).not.toMatch(
        /<script[^>]+src=|<link[^>]+href=|(?:src|href|url)\(?=?["']?https?:/,
      );
      const result = await renderInChromium(chromium!, join(outDir, 'report.html'));
      expect(result.console.filter((line) => /error|Uncaught/i.test(line))).toEqual([]);
      const total = Number(/data-charts-total="(\d+)"/.exec(result.dom)?.[1]);
      const rendered = Number(/data-charts-rendered="(\d+)"/.exec(result.dom)?.[1]);
      expect(total).toBeGreaterThanOrEqual(34);
      expect(rendered).toBe(total);
      // every chart title and axis label fits (the renderer shortens longer ones with an ellipsis)
      expect(result.dom.match(/>[^<>]*…<\/text>/g) ?? []).toEqual([]);
      // each run's per-step charts have their own x-range: one chart per run (`-student`)
      const perRun = [
        'length',
        'kl',
        'entropy',
        'zero-std',
        'held-out-sampled',
        'reward-wall',
        'grpo-loss',
        'grad-norm',
        'clip-fraction',
        'learning-rate',
      ];
      for (const id of [
        'reward',
        'pass-at-k',
        'maj-at-k',
        'sft-loss',
        'distill-loss',
        ...perRun,
        ...perRun.map((id) => `${id}-student`),
        'length-by-difficulty',
        'accuracy-by-difficulty',
        'reward-hacking',
        'reward-hacking-held-out',
        'dynamic-sampling',
        'length-penalty',
        'length-penalty-accuracy',
        'length-penalty-by-difficulty',
        'length-penalty-length-by-difficulty',
        'thinking-budget',
      ]) {
        expect(result.dom).toContain(`data-chart="${id}"`);
      }
    },
  );
});
