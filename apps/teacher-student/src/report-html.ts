import { writeFile } from 'node:fs/promises';
import type { Report } from './report.js';

/** One line of a chart. */
export type Series = { name: string; points: [number, number][]; color: string; dashed?: boolean };

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

function niceTicks(min: number, max: number, count: number): number[] {
  if (max - min < 1e-12) return [min];
  const rough = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? rough;
  const ticks: number[] = [];
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  return ticks;
}

const format = (value: number) =>
  Math.abs(value) >= 1000 || (Math.abs(value) < 0.01 && value !== 0)
    ? value.toExponential(1)
    : String(Number(value.toPrecision(3)));

/**
 * A line chart as inline SVG (no scripts, no external resources). `logX` uses a base-2 axis.
 */
export function lineChart(options: {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  logX?: boolean;
  yMin?: number;
  yMax?: number;
}): string {
  const width = 460;
  const height = 260;
  const margin = { left: 56, right: 12, top: 28, bottom: 64 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const tx = (x: number) => (options.logX ? Math.log2(x) : x);
  const all = options.series.flatMap((series) => series.points);
  const xs = all.map(([x]) => tx(x));
  const ys = all.map(([, y]) => y);
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  let yMin = options.yMin ?? (ys.length ? Math.min(...ys) : 0);
  let yMax = options.yMax ?? (ys.length ? Math.max(...ys) : 1);
  if (yMax - yMin < 1e-12) {
    yMin -= 0.5;
    yMax += 0.5;
  }
  const sx = (x: number) => margin.left + ((tx(x) - xMin) / Math.max(xMax - xMin, 1e-12)) * plotW;
  const sy = (y: number) => margin.top + (1 - (y - yMin) / (yMax - yMin)) * plotH;
  const parts: string[] = [];
  parts.push(
    `<svg data-chart="${escapeHtml(options.id)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(options.title)}">`,
  );
  parts.push(
    `<text x="${width / 2}" y="16" text-anchor="middle" class="title">${escapeHtml(options.title)}</text>`,
  );
  for (const tick of niceTicks(yMin, yMax, 4)) {
    const y = sy(tick);
    parts.push(
      `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" class="grid"/>`,
      `<text x="${margin.left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" class="tick">${format(tick)}</text>`,
    );
  }
  const xTicks = options.logX
    ? [...new Set(all.map(([x]) => x))].sort((a, b) => a - b)
    : niceTicks(xMin, xMax, 5);
  for (const tick of xTicks) {
    const x = sx(tick);
    parts.push(
      `<text x="${x.toFixed(1)}" y="${margin.top + plotH + 16}" text-anchor="middle" class="tick">${format(tick)}</text>`,
    );
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" class="frame"/>`,
    `<text x="${margin.left + plotW / 2}" y="${margin.top + plotH + 32}" text-anchor="middle" class="label">${escapeHtml(options.xLabel)}</text>`,
    `<text transform="translate(14 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle" class="label">${escapeHtml(options.yLabel)}</text>`,
  );
  for (const series of options.series) {
    if (series.points.length === 0) continue;
    const points = series.points
      .map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`)
      .join(' ');
    parts.push(
      `<polyline data-series="${escapeHtml(series.name)}" points="${points}" fill="none" stroke="${series.color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="5 4"' : ''}/>`,
    );
    if (series.points.length <= 24) {
      for (const [x, y] of series.points) {
        parts.push(
          `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${series.color}"/>`,
        );
      }
    }
  }
  // Legend under the axis label.
  let legendX = margin.left;
  const legendY = height - 12;
  for (const series of options.series) {
    parts.push(
      `<line x1="${legendX}" x2="${legendX + 18}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${series.color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="5 4"' : ''}/>`,
      `<text x="${legendX + 22}" y="${legendY}" class="legend">${escapeHtml(series.name)}</text>`,
    );
    legendX += 30 + series.name.length * 6.2;
  }
  parts.push('</svg>');
  return parts.join('');
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;

function table(headers: string[], rows: string[][]): string {
  return `<table><thead><tr>${headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`;
}

// Checks in the browser that every chart was laid out (non-empty boxes) and marks the body; the
// headless-Chromium test reads the mark from the DOM dump.
const CHECK_SCRIPT = `
(function () {
  var charts = document.querySelectorAll('svg[data-chart]');
  var rendered = 0;
  charts.forEach(function (svg) {
    var lines = svg.querySelectorAll('polyline');
    var ok = lines.length > 0;
    lines.forEach(function (line) {
      var box = line.getBBox();
      if (!(box.width > 0 || box.height > 0)) ok = false;
    });
    if (ok && svg.getBoundingClientRect().width > 0) rendered++;
    else console.error('chart did not render: ' + svg.getAttribute('data-chart'));
  });
  document.body.setAttribute('data-charts-total', String(charts.length));
  document.body.setAttribute('data-charts-rendered', String(rendered));
})();
`;

/** The self-contained HTML report (inline CSS, inline SVG charts, one small inline script). */
export function renderReportHtml(report: Report): string {
  const teacher = report.grpo.teacher.history;
  const student = report.grpo.student.history;
  const rlSeries = (
    pick: (record: (typeof teacher)[number]) => number | undefined,
    name: string,
    color: string,
    history = teacher,
    dashed = false,
  ): Series => ({
    name,
    color,
    dashed,
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
      yLabel: 'mean over samples',
      yMin: 0,
      series: [
        rlSeries((r) => r.reward, 'reward', COLORS[0]!),
        rlSeries((r) => r.accuracy, 'train accuracy', COLORS[1]!),
        {
          name: 'held-out greedy acc.',
          color: COLORS[2]!,
          points: heldOut(teacher, report.grpo.teacher.initialHeldOutAccuracy),
        },
      ],
    }),
    lineChart({
      id: 'reward-student',
      title: 'GRPO reward and accuracy (RL-only student)',
      xLabel: 'GRPO step',
      yLabel: 'mean over samples',
      yMin: 0,
      series: [
        rlSeries((r) => r.reward, 'reward', COLORS[0]!, student),
        rlSeries((r) => r.accuracy, 'train accuracy', COLORS[1]!, student),
        {
          name: 'held-out greedy acc.',
          color: COLORS[2]!,
          points: heldOut(student, report.grpo.student.initialHeldOutAccuracy),
        },
      ],
    }),
    lineChart({
      id: 'length',
      title: 'Mean completion length',
      xLabel: 'GRPO step',
      yLabel: 'tokens',
      series: [
        rlSeries((r) => r.meanLength, 'teacher', COLORS[0]!),
        rlSeries((r) => r.meanLength, 'RL-only student', COLORS[3]!, student, true),
      ],
    }),
    lineChart({
      id: 'kl',
      title: 'KL to the warm-start policy (k3)',
      xLabel: 'GRPO step',
      yLabel: 'nats / token',
      yMin: 0,
      series: [
        rlSeries((r) => r.kl, 'teacher', COLORS[0]!),
        rlSeries((r) => r.kl, 'RL-only student', COLORS[3]!, student, true),
      ],
    }),
    lineChart({
      id: 'entropy',
      title: 'Policy entropy',
      xLabel: 'GRPO step',
      yLabel: 'nats / token',
      yMin: 0,
      series: [
        rlSeries((r) => r.entropy, 'teacher', COLORS[0]!),
        rlSeries((r) => r.entropy, 'RL-only student', COLORS[3]!, student, true),
      ],
    }),
    lineChart({
      id: 'zero-std',
      title: 'Fraction of zero-variance groups',
      xLabel: 'GRPO step',
      yLabel: 'frac_reward_zero_std',
      yMin: 0,
      yMax: 1,
      series: [
        rlSeries((r) => r.fracZeroStd, 'teacher', COLORS[0]!),
        rlSeries((r) => r.fracZeroStd, 'RL-only student', COLORS[3]!, student, true),
      ],
    }),
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
        color: COLORS[index % COLORS.length]!,
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
        color: COLORS[index % COLORS.length]!,
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
    ['target', 'goal', 'measured', 'met'],
    report.targets.map((target) => [
      escapeHtml(target.name),
      escapeHtml(target.goal),
      target.value.toFixed(2),
      target.met ? '<span class="ok">yes</span>' : '<span class="no">no</span>',
    ]),
  );
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
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1000px; color: #222; padding: 0 12px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
code { font-size: 12px; word-break: break-all; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; }
svg { background: #fff; border: 1px solid #eee; }
svg .title { font-size: 13px; font-weight: 600; } svg .tick { font-size: 10px; fill: #555; }
svg .label { font-size: 11px; fill: #333; } svg .legend { font-size: 10px; }
svg .grid { stroke: #eee; } svg .frame { fill: none; stroke: #bbb; }
.ok { color: #1a7f37; font-weight: 600; } .no { color: #cf222e; font-weight: 600; }
.headline { font-size: 15px; }
</style>
</head>
<body>
<h1>rlvr teacher → student: RL, distillation, test-time compute</h1>
<p>${escapeHtml(report.task.description)} ${report.task.trainPrompts} training / ${report.task.evalPrompts} held-out prompts, seed ${report.config.seed}${report.config.quick ? ' (<b>--quick</b> run)' : ''}.
Teacher ${report.models.teacher.parameters.toLocaleString('en-US')} parameters, student ${report.models.student.parameters.toLocaleString('en-US')} (${pct(report.models.studentToTeacherRatio)}).
Trained with ${escapeHtml(report.environment.trainingBackend)}, sampled with onnxruntime (${escapeHtml(report.environment.rolloutExecutionProvider)}; @rlvr/rollout's ${escapeHtml(report.environment.rolloutEngines?.teacher ?? '?')} engine for the teacher, ${escapeHtml(report.environment.rolloutEngines?.student ?? '?')} for the student), on ${report.environment.cores} cores (${escapeHtml(report.environment.cpu)}), Node ${escapeHtml(report.environment.node)}. Generated ${escapeHtml(report.generatedAt)}.</p>
<p class="headline">pass@1 (held-out, temperature ${report.config.evaluation.temperature}): SFT teacher <b>${pct(h.sftTeacherPassAt1)}</b> → RL teacher <b>${pct(h.rlTeacherPassAt1)}</b> (${h.rlGainPoints >= 0 ? '+' : ''}${h.rlGainPoints.toFixed(1)} points);
distilled student <b>${pct(h.distilledStudentPassAt1)}</b> (${pct(h.distilledOverTeacher)} of the teacher) vs RL-only student <b>${pct(h.rlOnlyStudentPassAt1)}</b> with the same wall-clock;
RL teacher maj@8 <b>${pct(h.rlTeacherMajAt8)}</b>.</p>
<h2>Targets</h2>
${targetTable}
<h2>Held-out evaluation (${report.evaluation[0]?.samplesPerPrompt ?? 0} samples per prompt; pass@k unbiased, maj@k exact)</h2>
${evalTable}
<h2>Charts</h2>
<div class="charts">${charts.join('\n')}</div>
<h2>GRPO</h2>
<p>Both RL phases ran on <code>@rlvr/trainer</code>'s <code>GrpoTrainer</code> with an <code>@rlvr/rollout</code> ONNX sampler; the curves above are the trainer's metrics records (<code>reward/mean</code>, <code>reward/correct/mean</code>, <code>completions/mean_length</code>, <code>kl</code>, <code>entropy</code>, <code>frac_reward_zero_std</code>), the held-out greedy accuracy is the app's check between <code>step()</code> calls. Teacher: ${report.grpo.teacher.steps} steps (${report.grpo.teacher.sampledCompletions} completions sampled, ${report.grpo.teacher.skippedUpdates ?? 0} updates skipped); RL-only student: ${report.grpo.student.steps} steps in its wall-clock budget (${report.grpo.student.sampledCompletions} completions, ${report.grpo.student.skippedUpdates ?? 0} updates skipped). The trainer's own <code>metrics.jsonl</code>, <code>completions.jsonl</code> and checkpoints are under <code>grpo/teacher/</code> and <code>grpo/student/</code>.</p>
<h2>Distillation</h2>
<p>The RL teacher wrote ${d.traces} traces for ${report.config.distill.prompts} training prompts (pass rate ${pct(d.teacherTracePassRate)}); ${d.accepted} were verified correct and well-formed, ${d.kept} kept after filtering (shortest first, duplicates dropped)${d.reusedTracePrompts ? ` (traces of ${d.reusedTracePrompts} prompts reused from a file with the same teacher fingerprint, counted with the time they took)` : ''}. The student took ${d.steps} SFT steps on them. Traces ${(d.traceMs / 1000).toFixed(1)} s + training ${(d.trainMs / 1000).toFixed(1)} s; the RL-only student got the same ${((d.traceMs + d.trainMs) / 1000).toFixed(1)} s for ${report.grpo.student.steps} GRPO steps.</p>
<h2>Timings</h2>
${timingTable}
<h2>Sample completions (held-out, temperature ${report.config.evaluation.temperature})</h2>
${samples}
<script>${CHECK_SCRIPT}</script>
</body>
</html>
`;
}

/** Writes {@link renderReportHtml} to `path`. */
export async function writeReportHtml(path: string, report: Report): Promise<void> {
  await writeFile(path, renderReportHtml(report));
}
