import { escapeHtml } from './html.js';

/** One line of a {@link lineChart}. */
export type ChartSeries = {
  name: string;
  /** `[x, y]` pairs; non-finite values are left out. */
  points: readonly (readonly [number, number])[];
  /** Default: the next of {@link CHART_COLORS}. */
  color?: string;
  dashed?: boolean;
};

/** Options of {@link lineChart}. */
export type LineChartOptions = {
  /** Identifies the chart (`data-chart` attribute). */
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly ChartSeries[];
  /** Base-2 x axis (ticks at the data's x values). */
  logX?: boolean;
  yMin?: number;
  yMax?: number;
  /**
   * Exponential-moving-average weight in [0, 1) (TensorBoard's smoothing slider, debiased): with
   * more than 2 points a series is drawn raw (faint) and smoothed. Default 0 (raw only).
   */
  smoothing?: number;
  /** Width in CSS pixels. Default 460. */
  width?: number;
  /** Height of the plot area in CSS pixels. Default 150. */
  plotHeight?: number;
};

/** The default series colors (matplotlib's tab10). */
export const CHART_COLORS: readonly string[] = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#8c564b',
  '#e377c2',
  '#17becf',
];

const CHAR_WIDTH = 6.2; // a generous average glyph width of 10 px sans-serif
const MARGIN = { left: 58, right: 14, top: 26 };
/** Points drawn per line at most (longer series are thinned evenly). */
const MAX_DRAWN = 600;

/** Tick values at 1, 2 or 5 times a power of ten (`integer`: steps of at least 1). */
export function niceTicks(min: number, max: number, count: number, integer = false): number[] {
  if (max - min < 1e-12) return [min];
  const rough = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? rough;
  if (integer) step = Math.max(1, Math.round(step));
  const ticks: number[] = [];
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  return ticks;
}

/** Short numeric labels: 3 significant digits, exponent form outside [0.01, 1000). */
export function formatTick(value: number): string {
  return Math.abs(value) >= 1000 || (Math.abs(value) < 0.01 && value !== 0)
    ? value.toExponential(1)
    : String(Number(value.toPrecision(3)));
}

/** TensorBoard's debiased exponential moving average. */
export function smooth(values: readonly number[], weight: number): number[] {
  let last = 0;
  let debias = 1;
  return values.map((value) => {
    last = last * weight + (1 - weight) * value;
    debias *= weight;
    return last / (1 - debias);
  });
}

function fit(text: string, width: number): string {
  const max = Math.max(4, Math.floor(width / CHAR_WIDTH));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

type LegendItem = {
  name: string;
  label: string;
  color: string;
  dashed: boolean;
  x: number;
  row: number;
};

/** Lays legend entries out in rows that fit the chart's width (never clipped: long names get "…"). */
function layoutLegend(
  series: readonly { name: string; color: string; dashed?: boolean | undefined }[],
  width: number,
) {
  const items: LegendItem[] = [];
  const usable = width - 8 - 8;
  let x = 8;
  let row = 0;
  for (const entry of series) {
    const label = fit(entry.name, usable - 24);
    const itemWidth = 24 + label.length * CHAR_WIDTH + 12;
    if (x > 8 && x + itemWidth > width - 8) {
      x = 8;
      row++;
    }
    items.push({
      name: entry.name,
      label,
      color: entry.color,
      dashed: entry.dashed === true,
      x,
      row,
    });
    x += itemWidth;
  }
  return { items, rows: items.length === 0 ? 0 : row + 1 };
}

function polyline(
  points: readonly (readonly [number, number])[],
  attributes: string,
  sx: (x: number) => number,
  sy: (y: number) => number,
): string {
  const coordinates = points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
  return `<polyline points="${coordinates}" fill="none" ${attributes}/>`;
}

type Scale = {
  sx: (x: number) => number;
  sy: (y: number) => number;
  width: number;
  plotW: number;
  plotH: number;
};

type Drawn = Required<Pick<ChartSeries, 'name' | 'color'>> & ChartSeries;

/** The y range of the data (or the given bounds), widened when flat. */
function yRange(ys: readonly number[], options: LineChartOptions): [number, number] {
  let yMin = options.yMin ?? (ys.length ? Math.min(...ys) : 0);
  let yMax = options.yMax ?? (ys.length ? Math.max(...ys) : 1);
  if (yMax - yMin < 1e-12 * Math.max(1, Math.abs(yMax))) {
    const pad = Math.abs(yMax) > 0 ? Math.abs(yMax) * 0.1 : 0.5;
    yMin -= pad;
    yMax += pad;
  }
  return [yMin, yMax];
}

function axes(
  options: LineChartOptions,
  scale: Scale,
  all: readonly (readonly [number, number])[],
  yBounds: [number, number],
): string[] {
  const { sx, sy, width, plotW, plotH } = scale;
  const axisBottom = MARGIN.top + plotH;
  const parts: string[] = [];
  for (const tick of niceTicks(yBounds[0], yBounds[1], 4)) {
    const y = sy(tick);
    parts.push(
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#eee"/>`,
      `<text x="${MARGIN.left - 5}" y="${(y + 3.5).toFixed(1)}" text-anchor="end" font-size="10" fill="#555">${formatTick(tick)}</text>`,
    );
  }
  const xs = all.map(([x]) => x);
  const xTicks = options.logX
    ? spacedTicks(
        [...new Set(xs)].sort((a, b) => a - b),
        sx,
      )
    : niceTicks(
        Math.min(...xs),
        Math.max(...xs),
        Math.max(2, Math.floor(plotW / 70)),
        xs.every((x) => Number.isInteger(x)),
      );
  for (const tick of xs.length ? xTicks : []) {
    parts.push(
      `<text x="${sx(tick).toFixed(1)}" y="${axisBottom + 14}" text-anchor="middle" font-size="10" fill="#555">${formatTick(tick)}</text>`,
    );
  }
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#bbb"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${axisBottom + 29}" text-anchor="middle" font-size="11" fill="#333">${escapeHtml(fit(options.xLabel, plotW))}</text>`,
    `<text transform="translate(13 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#333">${escapeHtml(fit(options.yLabel, plotH))}</text>`,
  );
  return parts;
}

/** Narrowest gap, in px, between two x-tick labels of a log axis (a label is up to ~5 digits). */
const MIN_TICK_GAP = 30;

/**
 * The data x values of a log axis as ticks, left to right, leaving out any whose label would
 * come closer than {@link MIN_TICK_GAP} px to the previous one (the last value is always kept,
 * in place of a close predecessor): close values would draw their labels on top of each other.
 */
export function spacedTicks(sorted: readonly number[], sx: (x: number) => number): number[] {
  const kept: number[] = [];
  for (const tick of sorted) {
    const last = kept.at(-1);
    if (last === undefined || sx(tick) - sx(last) >= MIN_TICK_GAP) kept.push(tick);
  }
  const final = sorted.at(-1);
  if (final !== undefined && kept.at(-1) !== final) {
    if (kept.length > 1 && sx(final) - sx(kept.at(-1)!) < MIN_TICK_GAP) kept.pop();
    kept.push(final);
  }
  return kept;
}

/** At most about {@link MAX_DRAWN} points per line (every k-th and the last): pages of long runs stay small. */
function thin(
  points: readonly (readonly [number, number])[],
): readonly (readonly [number, number])[] {
  if (points.length <= MAX_DRAWN) return points;
  const every = Math.ceil(points.length / MAX_DRAWN);
  return points.filter((_, index) => index % every === 0 || index === points.length - 1);
}

/** A series' lines (raw faint + smoothed, or raw only) and, for short series, its points. */
function seriesLines(entry: Drawn, smoothing: number, scale: Scale): string[] {
  if (entry.points.length === 0) return [];
  const { sx, sy } = scale;
  const dash = entry.dashed ? ' stroke-dasharray="5 4"' : '';
  const name = escapeHtml(entry.name);
  const solid = `data-series="${name}" stroke="${entry.color}" stroke-width="2"${dash}`;
  const parts: string[] = [];
  if (smoothing > 0 && entry.points.length > 2) {
    const smoothed = smooth(
      entry.points.map(([, y]) => y),
      smoothing,
    ).map((y, index) => [entry.points[index]![0], y] as const);
    const faint = `data-raw="${name}" stroke="${entry.color}" stroke-opacity="0.3" stroke-width="1"${dash}`;
    parts.push(
      polyline(thin(entry.points), faint, sx, sy),
      polyline(thin(smoothed), solid, sx, sy),
    );
  } else {
    parts.push(polyline(thin(entry.points), solid, sx, sy));
  }
  if (entry.points.length <= 24) {
    for (const [x, y] of entry.points) {
      parts.push(
        `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${entry.color}"/>`,
      );
    }
  }
  return parts;
}

function legendParts(items: readonly LegendItem[], top: number): string[] {
  return items.flatMap((item) => {
    const y = top + item.row * 14;
    const dash = item.dashed ? ' stroke-dasharray="5 4"' : '';
    return [
      `<line x1="${item.x}" x2="${item.x + 18}" y1="${y - 3.5}" y2="${y - 3.5}" stroke="${item.color}" stroke-width="2"${dash}/>`,
      `<text x="${item.x + 22}" y="${y}" font-size="10"><title>${escapeHtml(item.name)}</title>${escapeHtml(item.label)}</text>`,
    ];
  });
}

/**
 * A line chart as inline SVG (no scripts, no external resources): its own x range (from its
 * data; `data-x-min`/`data-x-max` attributes), y range from the data unless `yMin`/`yMax` are
 * given, a legend below the axis that wraps onto more rows instead of being clipped (long names
 * shortened with "…", the full name as a tooltip), and optionally each series drawn raw (faint)
 * and smoothed. Text sizes are in CSS pixels at the chart's `width`, so keep charts at their
 * natural size (they shrink with `max-width: 100%` on narrow screens).
 */
export function lineChart(options: LineChartOptions): string {
  const width = options.width ?? 460;
  const plotH = options.plotHeight ?? 150;
  const plotW = width - MARGIN.left - MARGIN.right;
  const tx = (x: number) => (options.logX ? Math.log2(x) : x);
  const series: Drawn[] = options.series.map((entry, index) => ({
    ...entry,
    color: entry.color ?? CHART_COLORS[index % CHART_COLORS.length]!,
    points: entry.points.filter(
      ([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!options.logX || x > 0),
    ),
  }));
  const all = series.flatMap((entry) => entry.points);
  const xs = all.map(([x]) => tx(x));
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  const yBounds = yRange(
    all.map(([, y]) => y),
    options,
  );
  const scale: Scale = {
    width,
    plotW,
    plotH,
    sx: (x) =>
      xMax - xMin < 1e-12
        ? MARGIN.left + plotW / 2
        : MARGIN.left + ((tx(x) - xMin) / (xMax - xMin)) * plotW,
    sy: (y) => MARGIN.top + (1 - (y - yBounds[0]) / (yBounds[1] - yBounds[0])) * plotH,
  };
  const legend = layoutLegend(series, width);
  const legendTop = MARGIN.top + plotH + 40;
  const height = legendTop + legend.rows * 14 + 6;
  const range = all.length
    ? `data-x-min="${Math.min(...all.map(([x]) => x))}" data-x-max="${Math.max(...all.map(([x]) => x))}"`
    : 'data-x-min="" data-x-max=""';
  return [
    `<svg data-chart="${escapeHtml(options.id)}" ${range} xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(options.title)}" font-family="system-ui, sans-serif">`,
    `<title>${escapeHtml(options.title)}</title>`,
    `<text x="${width / 2}" y="16" text-anchor="middle" font-size="12" font-weight="600">${escapeHtml(fit(options.title, width - 16))}</text>`,
    ...axes(options, scale, all, yBounds),
    ...series.flatMap((entry) => seriesLines(entry, options.smoothing ?? 0, scale)),
    ...legendParts(legend.items, legendTop),
    '</svg>',
  ].join('');
}
