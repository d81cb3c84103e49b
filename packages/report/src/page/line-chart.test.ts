import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CHART_CHECK_SCRIPT,
  escapeHtml,
  findChromium,
  lineChart,
  niceTicks,
  PAGE_CSS,
  renderInChromium,
  smooth,
} from '../index.js';
import { spacedTicks } from './line-chart.js';

const longNames = Array.from(
  { length: 9 },
  (_, index) => `reward/a_rather_long_reward_function_name_${index}/mean_over_the_group`,
);
const crowded = () =>
  lineChart({
    id: 'crowded',
    title: 'A title far too long to fit into the width of a small chart, however wide it is drawn',
    xLabel: 'step',
    yLabel: 'value',
    width: 300,
    smoothing: 0.6,
    series: longNames.map((name, index) => ({
      name,
      points: Array.from(
        { length: 30 },
        (_, step) => [step + 1, Math.sin(step / 3 + index)] as [number, number],
      ),
    })),
  });

describe('lineChart', () => {
  it('should space the labels of a log x axis (no two closer than 30 px, first and last kept)', () => {
    expect(spacedTicks([0, 10, 20, 25, 60, 61], (x) => x)).toEqual([0, 61]);
    expect(spacedTicks([0, 40, 80], (x) => x)).toEqual([0, 40, 80]);
    expect(spacedTicks([5], (x) => x)).toEqual([5]);
    // the thinking-budget chart's x values (tokens): every label drawn at its own place
    const xs = [5.97, 7.89, 9.85, 13.7, 21.4, 33.3, 37.5, 77.2, 154, 309, 618];
    const svg = lineChart({
      id: 'budget',
      title: 'budget',
      xLabel: 'tokens',
      yLabel: 'accuracy',
      logX: true,
      series: [{ name: 'cut', points: xs.map((x, index) => [x, index / 10] as [number, number]) }],
    });
    const labels = [
      ...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" font-size="10"/g),
    ]
      .map((match) => Number(match[1]))
      .sort((a, b) => a - b);
    expect(labels.length).toBeGreaterThanOrEqual(5);
    expect(labels.length).toBeLessThan(xs.length);
    for (let index = 1; index < labels.length; index++) {
      expect(labels[index]! - labels[index - 1]!).toBeGreaterThanOrEqual(30);
    }
  });

  it('should wrap the legend onto rows and shorten names so nothing leaves the box', () => {
    const svg = crowded();
    const [, width, height] = /viewBox="0 0 (\d+) (\d+)"/.exec(svg)!.map(Number);
    expect(width).toBe(300);
    const legend = [
      ...svg.matchAll(
        /<text x="([\d.]+)" y="([\d.]+)" font-size="10"><title>([^<]*)<\/title>([^<]*)<\/text>/g,
      ),
    ];
    expect(legend).toHaveLength(9);
    for (const [, x, y, full, label] of legend) {
      expect(Number(x) + label!.length * 6.2).toBeLessThanOrEqual(width! - 8);
      expect(Number(y)).toBeLessThanOrEqual(height!);
      expect(longNames).toContain(full); // the full name stays in a tooltip
    }
    expect(new Set(legend.map((match) => match[2])).size).toBe(9); // one entry per row here
    // Raw (faint) and smoothed lines for every series.
    expect(svg.match(/data-raw=/g)).toHaveLength(9);
    expect(svg.match(/data-series=/g)).toHaveLength(9);
  });

  it('should escape names and skip non-finite points', () => {
    const svg = lineChart({
      id: '<id>',
      title: '<b>t</b>',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: '"><script>',
          points: [
            [1, 1],
            [2, Number.NaN],
            [3, 2],
          ],
        },
      ],
    });
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('data-series="&quot;&gt;&lt;script&gt;"');
    expect(svg).toContain('data-x-min="1" data-x-max="3"');
    expect(svg.match(/<circle/g)).toHaveLength(2);
  });

  it('should draw at most about 600 points per line of a long run, keeping the last', () => {
    const points = Array.from(
      { length: 5000 },
      (_, step) => [step + 1, step % 7] as [number, number],
    );
    const svg = lineChart({
      id: 'long',
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      smoothing: 0.6,
      series: [{ name: 's', points }],
    });
    const lines = [...svg.matchAll(/<polyline points="([^"]*)"/g)].map((match) =>
      match[1]!.split(' '),
    );
    expect(lines.map((line) => line.length)).toEqual([557, 557]); // every 9th, and the last
    expect(svg).toContain('data-x-min="1" data-x-max="5000"');
    expect(lines[0]!.at(-1)!.split(',')[0]).toBe('446.0'); // the right edge: 460 - 14 margin
  });

  it('should smooth like TensorBoard (debiased EMA) and pick integer step ticks', () => {
    expect(smooth([1, 1, 1], 0.6)).toEqual([1, 1, 1].map((value) => expect.closeTo(value, 12)));
    const [a, b] = smooth([0, 10], 0.5);
    expect(a).toBe(0);
    expect(b).toBeCloseTo((0.5 * 0 * 0.5 + 0.5 * 10) / (1 - 0.25), 12); // (0.25·0 + 0.5·10) / 0.75
    expect(niceTicks(1, 3, 5, true)).toEqual([1, 2, 3]);
    expect(niceTicks(0, 1, 4)).toEqual([0, 0.5, 1]);
  });

  const chromium = findChromium();
  it.skipIf(chromium === undefined && !process.env.CI)(
    'should lay out a crowded chart and a one-point series in Chromium, every text inside',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rlvr-chart-'));
      try {
        const path = join(dir, 'chart.html');
        writeFileSync(
          path,
          `<!doctype html><html><head><meta charset="utf-8"><style>${PAGE_CSS}</style></head><body><div class="charts">${crowded()}${lineChart(
            {
              id: 'one-step',
              title: 'a run that took one step so far',
              xLabel: 'step',
              yLabel: 'loss',
              series: [
                {
                  name: 'teacher',
                  points: [
                    [1, 0.5],
                    [2, 0.4],
                  ],
                },
                { name: 'student', points: [[1, 0.7]] },
              ],
            },
          )}</div><p>${escapeHtml('<ok>')}</p><script>${CHART_CHECK_SCRIPT}</script></body></html>`,
        );
        const result = await renderInChromium(chromium!, path, { windowSize: [600, 800] });
        expect(result.dom).toContain('data-charts-total="2"');
        expect(result.dom).toContain('data-charts-rendered="2"');
        expect(result.dom).toContain('data-charts-clipped="0"');
        expect(result.dom).toContain('data-charts-overflowing="0"');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
