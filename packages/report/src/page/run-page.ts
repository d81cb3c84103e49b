import { basename, resolve } from 'node:path';
import type { MetricRecord } from '@rlvr/core';
import { CHART_CHECK_SCRIPT, escapeHtml, htmlTable } from './html.js';
import { lineChart } from './line-chart.js';
import { page } from './page-shell.js';
import type { CompletionRow, RunFolder, TraceRow } from './read-run.js';

/** Layout settings of the run page (validated by the public entry points). @internal */
export type PageSettings = { title?: string; maxCompletions: number; smoothing: number };

const GROUP_ORDER = ['reward', 'loss', 'completions', 'eval'];
const NO_PREFIX = 'training';

function groupOf(name: string): string {
  const slash = name.indexOf('/');
  return slash > 0 ? name.slice(0, slash) : NO_PREFIX;
}

function compareGroups(a: string, b: string): number {
  const rank = (group: string) => {
    const index = GROUP_ORDER.indexOf(group === NO_PREFIX ? 'loss' : group);
    return index === -1 ? GROUP_ORDER.length : index;
  };
  return rank(a) - rank(b) || a.localeCompare(b);
}

type Points = [number, number][];

/** metric name → phase → points, in first-seen order. */
function collect(records: readonly MetricRecord[]): Map<string, Map<string, Points>> {
  const metrics = new Map<string, Map<string, Points>>();
  for (const record of records) {
    const phase = record.phase ?? '';
    for (const [name, value] of Object.entries(record.metrics)) {
      const phases = metrics.get(name) ?? new Map<string, Points>();
      metrics.set(name, phases);
      const points = phases.get(phase) ?? [];
      phases.set(phase, points);
      points.push([record.step, value]);
    }
  }
  return metrics;
}

function chartsSection(records: readonly MetricRecord[], smoothing: number): string {
  const metrics = collect(records);
  const groups = new Map<string, string[]>();
  for (const name of metrics.keys()) {
    const group = groupOf(name);
    groups.set(group, [...(groups.get(group) ?? []), name]);
  }
  const sections = [...groups.keys()].sort(compareGroups).map((group) => {
    const charts = groups.get(group)!.map((name) => {
      const phases = metrics.get(name)!;
      return lineChart({
        id: `metric:${name}`,
        title: name,
        xLabel: 'step',
        yLabel: name.split('/').at(-1)!,
        width: 380,
        smoothing,
        series: [...phases].map(([phase, points]) => ({
          name: phase === '' ? name : `${phase}`,
          points,
        })),
      });
    });
    return `<h3>${escapeHtml(group)} <small>(${charts.length})</small></h3><div class="charts">${charts.join('\n')}</div>`;
  });
  return sections.join('\n');
}

const number = (value: number | null | undefined, digits = 4) =>
  value === null || value === undefined
    ? '—'
    : Number.isFinite(value)
      ? String(Number(value.toPrecision(digits)))
      : String(value);

function summaryTable(records: readonly MetricRecord[]): string {
  const rows: string[][] = [];
  for (const [name, phases] of collect(records)) {
    for (const [phase, points] of phases) {
      const values = points.map(([, y]) => y).filter(Number.isFinite);
      const nonFinite = points.length - values.length;
      rows.push([
        `<code>${escapeHtml(name)}</code>`,
        escapeHtml(phase),
        String(points.length) + (nonFinite > 0 ? ` (${nonFinite} non-finite)` : ''),
        number(points[0]?.[1]),
        number(points.at(-1)?.[1]),
        number(values.length ? Math.min(...values) : undefined),
        number(values.length ? Math.max(...values) : undefined),
      ]);
    }
  }
  return htmlTable(['metric', 'phase', 'points', 'first', 'last', 'min', 'max'], rows);
}

const text = (value: unknown) =>
  `<div class="text">${escapeHtml(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))}</div>`;

function completionsTable(rows: readonly CompletionRow[], max: number): string {
  const shown = [...rows].sort((a, b) => b.step - a.step).slice(0, max);
  const columns = [...new Set(shown.flatMap((row) => Object.keys(row.rewards ?? {})))];
  const body = shown.map((row) => [
    String(row.step),
    text(row.prompt),
    text(row.completion),
    number(row.reward),
    ...columns.map((column) => number(row.rewards?.[column])),
    number(row.advantage),
    escapeHtml(String(row.finishReason ?? '')) +
      (row.completionTokens === undefined ? '' : ` (${row.completionTokens} tok)`),
    Array.isArray(row.violations) && row.violations.length > 0
      ? `<span class="no">${row.violations.map((entry) => escapeHtml(String(entry))).join(', ')}</span>`
      : '',
  ]);
  const note =
    shown.length < rows.length
      ? `<p>The ${shown.length} most recent of ${rows.length} rows (steps ${shown.at(-1)?.step}–${shown[0]?.step}).</p>`
      : `<p>${rows.length} rows.</p>`;
  return (
    note +
    htmlTable(
      [
        'step',
        'prompt',
        'completion',
        'reward',
        ...columns.map((column) => `reward: ${column}`),
        'advantage',
        'finish',
        'violations',
      ],
      body,
    )
  );
}

function tracesTable(rows: readonly TraceRow[], max: number): string {
  const accepted = rows.filter((row) => row.accepted === true).length;
  const shown = rows.slice(0, max);
  return `<p>${rows.length} traces, ${accepted} accepted by the verifier${shown.length < rows.length ? `; the first ${shown.length} shown` : ''}.</p>${htmlTable(
    ['prompt', 'completion', 'reward', 'accepted', 'finish'],
    shown.map((row) => [
      text(row.prompt),
      text(row.completion),
      number(row.reward),
      row.accepted ? '<span class="ok">yes</span>' : '<span class="no">no</span>',
      escapeHtml(String(row.finishReason ?? '')),
    ]),
  )}`;
}

function checkpointsTable(run: RunFolder): string {
  return htmlTable(
    ['path', 'kind', 'step', 'run id'],
    run.checkpoints.map((entry) => [
      `<code>${escapeHtml(entry.path)}</code>`,
      escapeHtml(entry.kind),
      entry.step === undefined ? '' : String(entry.step),
      escapeHtml(entry.runId ?? ''),
    ]),
  );
}

/** The whole page for a run folder already read. @internal */
export function renderRunPage(run: RunFolder, settings: PageSettings): string {
  const kinds = run.kinds.map((kind) => (kind === 'grpo' ? 'GRPO' : 'distillation')).join(' + ');
  const title = settings.title ?? `${kinds || 'rlvr'} run: ${basename(resolve(run.dir))}`;
  const steps = run.metrics.map((record) => record.step);
  const elapsed = Math.max(0, ...run.metrics.map((record) => record.elapsedMs ?? 0));
  const facts = [
    `Folder <code>${escapeHtml(resolve(run.dir))}</code>.`,
    run.metrics.length > 0
      ? `${run.metrics.length} metric records (steps ${Math.min(...steps)}–${Math.max(...steps)}${elapsed > 0 ? `, ${(elapsed / 1000).toFixed(1)} s` : ''}) from ${run.metricsSources.map((source) => `<code>${escapeHtml(source)}</code>`).join(', ')}.`
      : 'No metric records.',
    `Generated ${escapeHtml(new Date().toISOString())}.`,
  ];
  const sections: string[] = [];
  if (run.warnings.length > 0) {
    sections.push(
      `<h2>Warnings</h2><ul>${run.warnings.map((warning) => `<li>${escapeHtml(warning)}</li>`).join('')}</ul>`,
    );
  }
  if (run.metrics.length > 0) {
    sections.push(
      `<h2>Metrics</h2><p>Faint: raw values; solid: smoothed (debiased EMA, weight ${settings.smoothing}). Each chart has its own step range.</p>${chartsSection(run.metrics, settings.smoothing)}`,
      `<h2>Metric summary</h2>${summaryTable(run.metrics)}`,
    );
  }
  if (run.completions.length > 0) {
    sections.push(
      `<h2>Completions</h2>${completionsTable(run.completions, settings.maxCompletions)}`,
    );
  }
  if (run.traces.length > 0) {
    sections.push(`<h2>Teacher traces</h2>${tracesTable(run.traces, settings.maxCompletions)}`);
  }
  if (run.checkpoints.length > 0) sections.push(`<h2>Checkpoints</h2>${checkpointsTable(run)}`);
  if (run.config.length > 0) {
    sections.push(
      `<h2>Config</h2>${run.config
        .map(
          (entry) =>
            `<h3><code>${escapeHtml(entry.source)}</code></h3><pre>${escapeHtml(entry.text)}</pre>`,
        )
        .join('\n')}`,
    );
  }
  return page({
    title,
    body: `<h1>${escapeHtml(title)}</h1><p>${facts.join(' ')}</p>\n${sections.join('\n')}`,
    script: CHART_CHECK_SCRIPT,
  });
}
