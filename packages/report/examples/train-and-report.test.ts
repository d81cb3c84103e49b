import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tinyGrpoTrainer } from '../src/testing/run-folders.js';
import { trainAndReport } from './train-and-report.js';

const EXAMPLE = new URL('./train-and-report.ts', import.meta.url);
const README = new URL('../README.md', import.meta.url);

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-example-report-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('examples/train-and-report.ts (the README example)', () => {
  it('should log 2 GRPO steps to CSV and TensorBoard and write the run page', async () => {
    const runDir = join(root, 'run');
    const { grpo, close } = await tinyGrpoTrainer(runDir, 2);
    let result: Awaited<ReturnType<typeof trainAndReport>>;
    try {
      result = await trainAndReport(grpo, runDir, 2);
    } finally {
      await close();
    }
    expect(result.path).toBe(join(runDir, 'report.html'));
    const csv = (await readFile(join(runDir, 'metrics.csv'), 'utf8')).trim().split('\n');
    expect(csv).toHaveLength(3);
    expect(csv[0]).toMatch(/^step,elapsedMs,phase,reward\/mean,/);
    expect(csv.slice(1).map((line) => line.split(',').slice(0, 1)[0])).toEqual(['1', '2']);
    const [events] = await readdir(join(runDir, 'tensorboard'));
    expect(events).toMatch(/^events\.out\.tfevents\.\d+\.[\w.-]+$/);
    const html = await readFile(result.path, 'utf8');
    expect(html).toContain('data-chart="metric:reward/mean"');
    expect(html).toContain('<h2>Completions</h2>');
  }, 120_000);

  it("should be exactly the README's example code block", async () => {
    const readme = await readFile(README, 'utf8');
    const section = readme.slice(readme.indexOf('## Example'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBe(await readFile(EXAMPLE, 'utf8'));
  });
});
