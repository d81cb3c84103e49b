import { writeFile } from 'node:fs/promises';
import {
  CHART_CHECK_SCRIPT,
  CHART_COLORS,
  type ChartSeries,
  escapeHtml,
  lineChart,
  PAGE_CSS,
  htmlTable as table,
} from '@rlvr/report';
import { EVAL_SAMPLES } from './grpo.js';
import type { Report } from './report.js';
import { claimCharts, growthCharts, perRunCharts, trainingCharts } from './report-charts.js';

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;

/** The self-contained HTML report (inline CSS, inline SVG charts, one small inline script). */
export function renderReportHtml(report: Report): string {
  const teacher = report.grpo.teacher.history;
  const student = report.grpo.student.history;
  const rlSeries = (
    pick: (record: (typeof teacher)[number]) => number | undefined,
    name: string,
    color: string,
    history = teacher,
  ): ChartSeries => ({
    name,
    color,
    points: history
      .map((record) => [record.step, pick(record)] as [number, number | undefined])
      .filter((entry): entry is [number, number] => entry[1] !== undefined),
  });
  const heldOut = (history: typeof teacher, initial: number) => [
    [0, initial] as [number, number],
    ...history
      .filter((record) => record.heldOutAccuracy !== undefined)
      .map((record) => [record.step, record.heldOutAccuracy!] as [number, number]),
  ];
  const charts = [
    lineChart({
      id: 'reward',
      title: 'GRPO reward and accuracy (teacher)',
      xLabel: 'GRPO step',
      smoothing: 0.6,
      yLabel: 'mean over samples',
      yMin: 0,
      series: [
        rlSeries((r) => r.reward, 'reward', CHART_COLORS[0]!),
        rlSeries((r) => r.accuracy, 'train accuracy', CHART_COLORS[1]!),
        {
          name: 'held-out greedy acc.',
          color: CHART_COLORS[2]!,
          points: heldOut(teacher, report.grpo.teacher.initialHeldOutAccuracy),
        },
      ],
    }),
    lineChart({
      id: 'reward-student',
      title: 'GRPO reward and accuracy (RL-only student)',
      xLabel: 'GRPO step',
      smoothing: 0.6,
      yLabel: 'mean over samples',
      yMin: 0,
      series: [
        rlSeries((r) => r.reward, 'reward', CHART_COLORS[0]!, student),
        rlSeries((r) => r.accuracy, 'train accuracy', CHART_COLORS[1]!, student),
        {
          name: 'held-out greedy acc.',
          color: CHART_COLORS[2]!,
          points: heldOut(student, report.grpo.student.initialHeldOutAccuracy),
        },
      ],
    }),
    // one chart per run, so each has its own x-range (30 teacher steps vs 180 student steps)
    ...perRunCharts(report, 'length', 'Mean completion length', 'tokens', (r) => r.meanLength),
    ...perRunCharts(report, 'kl', 'KL to the warm-start policy (k3)', 'nats / token', (r) => r.kl, {
      yMin: 0,
    }),
    ...perRunCharts(report, 'entropy', 'Policy entropy', 'nats / token', (r) => r.entropy, {
      yMin: 0,
    }),
    ...perRunCharts(
      report,
      'zero-std',
      'Fraction of zero-variance groups',
      'frac_reward_zero_std',
      (r) => r.fracZeroStd,
      { yMin: 0, yMax: 1 },
    ),
    lineChart({
      id: 'pass-at-k',
      title: 'Test-time compute: pass@k (held-out)',
      xLabel: 'k (samples per prompt)',
      yLabel: 'accuracy',
      logX: true,
      yMin: 0,
      yMax: 1,
      series: report.evaluation.map((evaluation, index) => ({
        name: evaluation.name,
        color: CHART_COLORS[index % CHART_COLORS.length]!,
        points: evaluation.curve.map((p) => [p.k, p.passAtK] as [number, number]),
      })),
    }),
    lineChart({
      id: 'maj-at-k',
      title: 'Test-time compute: maj@k (held-out)',
      xLabel: 'k (votes per prompt)',
      yLabel: 'accuracy',
      logX: true,
      yMin: 0,
      yMax: 1,
      series: report.evaluation.map((evaluation, index) => ({
        name: evaluation.name,
        color: CHART_COLORS[index % CHART_COLORS.length]!,
        dashed: true,
        points: evaluation.curve.map((p) => [p.k, p.majAtK] as [number, number]),
      })),
    }),
  ];
  const ks = report.evaluation[0]?.curve.map((p) => p.k) ?? [];
  const evalTable = table(
    [
      'model',
      'params',
      ...ks.map((k) => `pass@${k}`),
      ...ks.filter((k) => k > 1).map((k) => `maj@${k}`),
      'greedy',
      'format',
      'mean len',
    ],
    report.evaluation.map((evaluation) => [
      escapeHtml(evaluation.name),
      evaluation.parameters.toLocaleString('en-US'),
      ...evaluation.curve.map((p) => pct(p.passAtK)),
      ...evaluation.curve.filter((p) => p.k > 1).map((p) => pct(p.majAtK)),
      pct(evaluation.greedyAccuracy),
      pct(evaluation.formatRate),
      evaluation.meanLength.toFixed(1),
    ]),
  );
  const targetTable = table(
    ['target', 'goal', 'measured', 'met', 'details'],
    report.targets.map((target) => [
      escapeHtml(target.name),
      escapeHtml(target.goal),
      `${target.value.toFixed(2)} ${escapeHtml(target.unit ?? '')}`,
      target.met ? '<span class="ok">yes</span>' : '<span class="no">no</span>',
      `<small>${escapeHtml(target.detail ?? '')}</small>`,
    ]),
  );
  const claims = report.claims;
  const claimsSection =
    claims === undefined
      ? '<h2>Claims</h2><p>The claims phase did not run (<code>--no-claims</code>): only the length-growth row, read from the teacher run, is in the targets table.</p>'
      : `<h2>Claims</h2>
<p>Each arm is the teacher's GRPO run from the SFT teacher (same seed, same settings) for ${claims.steps} steps with one change; its control is the teacher run's held-out check at step ${claims.steps}${claims.hackingControl === undefined ? '' : `, except reward hacking's: its SFT teacher was warm-started on traces with ${pct(claims.hackingWarmStart.hedgeRate)} hedged answers (1–${claims.hackingWarmStart.hedgeMaxExtra} extra digits), and its control is the same GRPO run from that teacher rewarded by the verifier`}${claims.naiveReward.length > 1 ? `; reward hacking has one naive-reward arm per GRPO seed (${claims.naiveReward.map((entry) => entry.seed).join(', ')}), the row and the held-out chart take their mean, the per-step chart and the transcripts are seed ${claims.naiveReward[0]!.seed}'s` : ''}; dynamic sampling instead continues the RL teacher for ${claims.dynamicSamplingSteps} steps at ${claims.dynamicSamplingGroupSize} samples per prompt (the teacher run: ${report.config.grpo.groupSize}), on and off, one pair per GRPO seed (${claims.dynamicSampling.map((pair) => pair.seed).join(', ')}): late training, where most groups are all-correct and the filter has work to do. Held-out checks sample ${report.config.grpo.evalPrompts} prompts × ${EVAL_SAMPLES} at temperature 1 with a fixed seed.</p>
<div class="charts">${claimCharts(report).join('\n')}</div>
<h3>Reward hacking: held-out transcripts of the naive-reward policy</h3>
<p>The robust math verifier rejected ${claims.hacking.caught} of ${claims.hacking.total} final held-out samples that the naive checker (gold digit anywhere in the answer) accepted; ${claims.hacking.hedged} were hedged answer lists.</p>
${table(
  ['prompt', 'gold', 'completion', 'naive', 'verifier'],
  claims.hacking.examples.map((example) => [
    `<code>${escapeHtml(example.prompt)}</code>`,
    escapeHtml(example.gold),
    `<code>${escapeHtml(example.completion)}</code>`,
    example.naive ? '<span class="ok">1</span>' : '<span class="no">0</span>',
    example.robust ? '<span class="ok">1</span>' : '<span class="no">0</span>',
  ]),
)}`;
  const timingTable = table(
    ['phase', 'seconds', 'resumed'],
    [
      ...report.timings.phases.map((phase) => [
        escapeHtml(phase.name),
        phase.seconds.toFixed(1),
        phase.resumed ? 'yes' : '',
      ]),
      ['<b>all phases</b>', `<b>${report.timings.phasesSeconds.toFixed(1)}</b>`, ''],
    ],
  );
  const samples = report.evaluation
    .map(
      (evaluation) =>
        `<h3>${escapeHtml(evaluation.name)}</h3>${table(
          ['prompt', 'gold', 'completion', 'correct'],
          evaluation.examples.map((example) => [
            `<code>${escapeHtml(example.prompt)}</code>`,
            escapeHtml(example.gold),
            `<code>${escapeHtml(example.completion)}</code>`,
            example.correct ? '<span class="ok">✓</span>' : '<span class="no">✗</span>',
          ]),
        )}`,
    )
    .join('');
  const h = report.headline;
  const d = report.distill;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rlvr teacher-student report</title>
<style>${PAGE_CSS}
body { max-width: 1000px; }
.headline { font-size: 15px; }
</style>
</head>
<body>
<h1>rlvr teacher → student: RL, distillation, test-time compute</h1>
<p>${escapeHtml(report.task.description)} ${report.task.trainPrompts} training / ${report.task.evalPrompts} held-out prompts, seed ${report.config.seed}${report.config.quick ? ' (<b>--quick</b> run)' : ''}.
Teacher ${report.models.teacher.parameters.toLocaleString('en-US')} parameters, student ${report.models.student.parameters.toLocaleString('en-US')} (${pct(report.models.studentToTeacherRatio)}).
Trained with ${escapeHtml(report.environment.trainingBackend)}, sampled with onnxruntime (${escapeHtml(report.environment.rolloutExecutionProvider)}; @rlvr/rollout's ${escapeHtml(report.environment.rolloutEngines?.teacher ?? '?')} engine for the teacher, ${escapeHtml(report.environment.rolloutEngines?.student ?? '?')} for the student), on ${report.environment.cores} cores (${escapeHtml(report.environment.cpu)}), Node ${escapeHtml(report.environment.node)}. Generated ${escapeHtml(report.generatedAt)}.</p>
<p class="headline">pass@1 (held-out, temperature ${report.config.evaluation.temperature}): SFT teacher <b>${pct(h.sftTeacherPassAt1)}</b> → RL teacher <b>${pct(h.rlTeacherPassAt1)}</b> (${h.rlGainPoints >= 0 ? '+' : ''}${h.rlGainPoints.toFixed(1)} points);
distilled student <b>${pct(h.distilledStudentPassAt1)}</b> (${pct(h.distilledOverTeacher)} of the teacher) vs RL-only student <b>${pct(h.rlOnlyStudentPassAt1)}</b> (${report.grpo.student.steps} GRPO steps);
RL teacher maj@8 <b>${pct(h.rlTeacherMajAt8)}</b>.</p>
<h2>Targets</h2>
${targetTable}
<h2>Held-out evaluation (${report.evaluation[0]?.samplesPerPrompt ?? 0} samples per prompt; pass@k unbiased, maj@k exact)</h2>
${evalTable}
<h2>Charts</h2>
<div class="charts">${[...charts, ...trainingCharts(report)].join('\n')}</div>
<h2>Length and accuracy during RL, by difficulty</h2>
<p>The warm-start mixes a short style (no intermediate steps) with written-out chains; the teacher's GRPO is rewarded only for the answer and the format, so any change of length comes from reward.</p>
<div class="charts">${growthCharts(report).join('\n')}</div>
${claimsSection}
<h2>GRPO</h2>
<p>Both RL phases ran on <code>@rlvr/trainer</code>'s <code>GrpoTrainer</code> with an <code>@rlvr/rollout</code> ONNX sampler; the curves above are the trainer's metrics records (<code>reward/mean</code>, <code>reward/correct/mean</code>, <code>completions/mean_length</code>, <code>kl</code>, <code>entropy</code>, <code>frac_reward_zero_std</code>), the held-out greedy accuracy is the app's check between <code>step()</code> calls. Teacher: ${report.grpo.teacher.steps} steps (${report.grpo.teacher.sampledCompletions} completions sampled, ${report.grpo.teacher.skippedUpdates ?? 0} updates skipped); RL-only student: ${report.grpo.student.steps} steps (grpo.studentSteps) (${report.grpo.student.sampledCompletions} completions, ${report.grpo.student.skippedUpdates ?? 0} updates skipped). The trainer's own <code>metrics.jsonl</code>, <code>completions.jsonl</code> and checkpoints are under <code>grpo/teacher/</code> and <code>grpo/student/</code>.</p>
<h2>Distillation</h2>
<p>The RL teacher wrote ${d.traces} traces for ${report.config.distill.prompts} training prompts (pass rate ${pct(d.teacherTracePassRate)}); ${d.accepted} were verified correct and well-formed, ${d.kept} kept after filtering (shortest first, duplicates dropped)${d.reusedTracePrompts ? ` (traces of ${d.reusedTracePrompts} prompts reused from a file with the same teacher fingerprint, counted with the time they took)` : ''}. The student took ${d.steps} SFT steps on them. Traces ${(d.traceMs / 1000).toFixed(1)} s + training ${(d.trainMs / 1000).toFixed(1)} s; the RL-only student ran ${report.grpo.student.steps} GRPO steps in ${(report.grpo.student.timeMs / 1000).toFixed(1)} s.</p>
<h2>Timings</h2>
${timingTable}
<h2>Sample completions (held-out, temperature ${report.config.evaluation.temperature})</h2>
${samples}
<script>${CHART_CHECK_SCRIPT}</script>
</body>
</html>
`;
}

/** Writes {@link renderReportHtml} to `path`. */
export async function writeReportHtml(path: string, report: Report): Promise<void> {
  await writeFile(path, renderReportHtml(report));
}
