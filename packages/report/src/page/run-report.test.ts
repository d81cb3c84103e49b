import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findChromium,
  readRunFolder,
  renderInChromium,
  renderRunReport,
  writeRunReport,
} from '../index.js';
import { distillRunFolder, grpoRunFolder } from '../testing/run-folders.js';

let root: string;
let grpoDir: string;
let distillDir: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'rlvr-report-'));
  grpoDir = join(root, 'grpo');
  distillDir = join(root, 'distill');
  await grpoRunFolder(grpoDir);
  await distillRunFolder(distillDir);
}, 240_000);
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const metricLines = (dir: string) =>
  readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { step: number; metrics: Record<string, number> });

/** `data-x-min`/`data-x-max` of the chart of `name`. */
function xRange(html: string, name: string): [number, number] {
  const id = name.replaceAll('&', '&amp;').replaceAll('"', '&quot;');
  const match = new RegExp(
    `data-chart="metric:${id.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" data-x-min="([^"]*)" data-x-max="([^"]*)"`,
  ).exec(html);
  expect(match, `chart of ${name}`).not.toBeNull();
  return [Number(match![1]), Number(match![2])];
}

describe('renderRunReport on a GrpoTrainer run folder', () => {
  it('should chart every metric GrpoTrainer logged, each over its own steps', async () => {
    const html = await renderRunReport(grpoDir);
    const records = metricLines(grpoDir);
    expect(records.map((record) => record.step)).toEqual([1, 2, 3]);
    const names = [...new Set(records.flatMap((record) => Object.keys(record.metrics)))];
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) {
      const steps = records.filter((record) => name in record.metrics).map((record) => record.step);
      expect(xRange(html, name)).toEqual([Math.min(...steps), Math.max(...steps)]);
    }
    // Grouped by prefix, reward first.
    expect(html.indexOf('<h3>reward')).toBeGreaterThan(0);
    expect(html.indexOf('<h3>reward')).toBeLessThan(html.indexOf('<h3>completions'));
    // Three points per series: raw (faint) and smoothed lines.
    expect(html).toMatch(/data-raw="train" stroke="[^"]+" stroke-opacity="0.3"/);
  });

  it('should show the completions with their rewards, escaped, and the saved settings', async () => {
    const html = await renderRunReport(grpoDir, { maxCompletions: 5 });
    const rows = readFileSync(join(grpoDir, 'completions.jsonl'), 'utf8').trim().split('\n');
    expect(rows).toHaveLength(3 * 2 * 4);
    expect(html).toContain(`The 5 most recent of ${rows.length} rows`);
    expect(html).toContain('<th>reward: correct</th><th>reward: short</th>');
    const last = JSON.parse(rows.at(-1)!) as { prompt: string };
    expect(last.prompt).toMatch(/^\d{3}>$/);
    expect(html).toContain(`<div class="text">${last.prompt.replace('>', '&gt;')}</div>`);
    expect(html).not.toContain(`<div class="text">${last.prompt}</div>`);
    expect(html).toContain('checkpoints/step-00000003/state.json (settings)');
    expect(html).toContain('&quot;groupSize&quot;: 4');
    const run = await readRunFolder(grpoDir);
    expect(run.kinds).toEqual(['grpo']);
    expect(run.checkpoints).toMatchObject([
      { path: 'checkpoints/step-00000003', kind: 'grpo', step: 3 },
    ]);
  });
});

describe('renderRunReport on a distillation run folder', () => {
  it('should chart the distillation history and list traces, checkpoint and settings', async () => {
    const run = await readRunFolder(distillDir);
    expect(run.kinds).toEqual(['distill']);
    expect(run.metricsSources).toEqual(['checkpoint/state.json (history)']);
    expect(run.checkpoints).toMatchObject([{ path: 'checkpoint', kind: 'distill' }]);
    expect(run.traces).toHaveLength(8 * 2);
    const html = await renderRunReport(distillDir);
    for (const name of ['loss', 'learning_rate', 'grad_norm', 'tokens']) {
      expect(xRange(html, name)).toEqual([1, run.metrics.length]);
    }
    expect(html).toContain('<h2>Teacher traces</h2><p>16 traces');
    expect(html).toContain('traces.jsonl (traces header)');
    expect(html).toContain('checkpoint/state.json (settings)');
  });
});

describe('writeRunReport', () => {
  it('should write report.html and refuse to replace it without overwrite', async () => {
    const { path } = await writeRunReport(grpoDir);
    expect(path).toBe(join(grpoDir, 'report.html'));
    writeFileSync(path, 'my notes');
    await expect(writeRunReport(grpoDir)).rejects.toMatchObject({ code: 'WOULD_OVERWRITE' });
    expect(readFileSync(path, 'utf8')).toBe('my notes');
    await writeRunReport(grpoDir, { overwrite: true });
    expect(readFileSync(path, 'utf8')).toMatch(/^<!doctype html>/);
    rmSync(path);
  });

  it('should validate everything before writing anything', async () => {
    const out = join(root, 'x', 'page.html');
    await expect(writeRunReport(grpoDir, { out, overwrite: 'yes' as never })).rejects.toThrow(
      /options\.overwrite/,
    );
    await expect(writeRunReport(grpoDir, { out, smothing: 0.5 } as never)).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      message: expect.stringContaining("did you mean 'smoothing'?"),
    });
    await expect(writeRunReport(grpoDir, { out, smoothing: 1 })).rejects.toThrow(
      /options\.smoothing/,
    );
    await expect(writeRunReport(join(root, 'x'), { out })).rejects.toThrow(/runDir/);
    await expect(renderRunReport(root)).rejects.toThrow(/holds none/);
    expect(existsSync(join(root, 'x'))).toBe(false);
  });
});

const chromium = findChromium();
describe.skipIf(chromium === undefined && !process.env.CI)(
  'the run page in headless Chromium',
  () => {
    it.each([
      ['GRPO', () => grpoDir],
      ['distillation', () => distillDir],
    ])(
      'should lay out every chart of the %s page at 600 px, no text clipped, no errors',
      async (_, dir) => {
        expect(chromium, 'chromium must be installed in CI (see .ci/run)').toBeDefined();
        const out = join(root, `${dir().split('/').at(-1)}.html`);
        await writeRunReport(dir(), { out });
        const html = readFileSync(out, 'utf8');
        expect(html).not.toMatch(
          /<script[^>]+src=|<link[^>]+href=|(?:src|href|url)\(?=?["']?https?:/,
        );
        const result = await renderInChromium(chromium!, out, { windowSize: [600, 3000] });
        expect(result.console.filter((line) => /error|Uncaught/i.test(line))).toEqual([]);
        const count = (name: string) =>
          Number(new RegExp(`data-charts-${name}="(\\d+)"`).exec(result.dom)?.[1]);
        expect(count('total')).toBeGreaterThanOrEqual(4);
        expect(count('rendered')).toBe(count('total'));
        expect(count('clipped')).toBe(0);
        expect(count('overflowing')).toBe(0);
        expect(result.dom).toContain('data-page-scrolls-sideways="false"');
      },
    );
  },
);
