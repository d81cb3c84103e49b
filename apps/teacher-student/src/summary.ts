import type { Report } from './report.js';

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;

/** The console summary: pass@k / maj@k per model, targets and phase timings. */
export function summaryTable(report: Report): string {
  const ks = report.evaluation[0]?.curve.map((point) => point.k) ?? [];
  const headers = [
    'model',
    'params',
    ...ks.map((k) => `pass@${k}`),
    ...ks.filter((k) => k > 1).map((k) => `maj@${k}`),
  ];
  const rows = report.evaluation.map((evaluation) => [
    evaluation.name,
    evaluation.parameters.toLocaleString('en-US'),
    ...evaluation.curve.map((point) => pct(point.passAtK)),
    ...evaluation.curve.filter((point) => point.k > 1).map((point) => pct(point.majAtK)),
  ]);
  const lines = [renderTable(headers, rows), ''];
  lines.push(
    renderTable(
      ['target', 'measured', 'met'],
      report.targets.map((target) => [
        target.goal,
        `${target.value.toFixed(2)} ${target.unit ?? ''}`.trim(),
        target.met ? 'yes' : 'NO',
      ]),
    ),
    '',
  );
  lines.push(
    renderTable(
      ['phase', 'seconds'],
      [
        ...report.timings.phases.map((phase) => [
          `${phase.name}${phase.resumed ? ' (resumed)' : ''}`,
          phase.seconds.toFixed(1),
        ]),
        ['all phases', report.timings.phasesSeconds.toFixed(1)],
      ],
    ),
  );
  return lines.join('\n');
}

function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ');
  return [
    line(headers),
    widths.map((width) => '-'.repeat(width)).join('  '),
    ...rows.map(line),
  ].join('\n');
}
