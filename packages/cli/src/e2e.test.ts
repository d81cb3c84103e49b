import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTfRecords } from './test/tfrecord.js';

const run = promisify(execFile);
const packageDir = resolve(import.meta.dirname, '..');
const bin = join(packageDir, 'dist', 'cli.js');

/** The commands of the README's `sh` block under `heading`, in order. */
function readmeBlock(heading: string): string[] {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, ''))
    .filter((line) => line.trim() !== '');
}

const quickStart = () => readmeBlock('## Quick start');

/** Runs `rlvr …` (the built binary) or `cd DIR` like a shell would. */
async function shell(line: string, cwd: string): Promise<{ cwd: string; stdout: string }> {
  const [program, ...args] = line.trim().split(/\s+/);
  if (program === 'cd') return { cwd: resolve(cwd, args[0]!), stdout: '' };
  if (program !== 'rlvr') throw new Error(`unexpected command in the README: ${line}`);
  const { stdout } = await run(process.execPath, [bin, ...args], {
    cwd,
    env: { ...process.env, CI: 'true' },
    timeout: 120_000,
  });
  return { cwd, stdout };
}

const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map(
      (line) =>
        JSON.parse(line) as { step: number; phase?: string; metrics: Record<string, number> },
    );

function eventFile(dir: string): Uint8Array {
  const files = readdirSync(join(dir, 'tensorboard')).filter((name) =>
    name.startsWith('events.out.tfevents.'),
  );
  expect(files).toHaveLength(1);
  return readFileSync(join(dir, 'tensorboard', files[0]!));
}

describe('rlvr (built binary, end to end)', () => {
  const root = mkdtempSync(join(tmpdir(), 'rlvr-e2e-'));
  let project = '';
  const outputs: Record<string, string> = {};

  beforeAll(async () => {
    if (!existsSync(bin))
      throw new Error(`${bin} is missing: build the package first (pnpm build)`);
    let cwd = root;
    for (const line of quickStart()) {
      const result = await shell(line, cwd);
      cwd = result.cwd;
      outputs[line.split(/\s+/)[1] ?? line] = result.stdout;
    }
    project = cwd;
  }, 240_000);

  it('should run the README quick start: init → sft → grpo → eval → report', () => {
    expect(quickStart().map((line) => line.split(/\s+/).slice(0, 2).join(' '))).toEqual([
      'rlvr init',
      'cd my-project',
      'rlvr sft',
      'rlvr grpo',
      'rlvr eval',
      'rlvr report',
    ]);
    expect(outputs.sft).toMatch(/^sft: 180 steps, final loss \d/);
    expect(outputs.grpo).toMatch(/^grpo: 8 steps/);
    expect(outputs.eval).toMatch(/pass@k/);
    expect(outputs.report).toMatch(/report: wrote runs\/grpo\/report\.html/);
  });

  it('should log one metrics row per step to JSONL and CSV', () => {
    const sft = jsonl(join(project, 'runs/sft/metrics.jsonl'));
    expect(sft).toHaveLength(180);
    expect(sft.map((row) => row.step)).toEqual(Array.from({ length: 180 }, (_, i) => i + 1));
    expect(sft.every((row) => row.phase === 'sft' && Number.isFinite(row.metrics.loss))).toBe(true);
    expect(sft.at(-1)!.metrics.loss!).toBeLessThan(sft[0]!.metrics.loss!);
    const grpo = jsonl(join(project, 'runs/grpo/metrics.jsonl'));
    expect(grpo.map((row) => row.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(grpo.every((row) => Number.isFinite(row.metrics['reward/mean']))).toBe(true);
    const csv = readFileSync(join(project, 'runs/grpo/metrics.csv'), 'utf8').trim().split('\n');
    const header = csv[0]!.split(',');
    expect(header.slice(0, 3)).toEqual(['step', 'elapsedMs', 'phase']);
    expect(header).toContain('reward/mean');
    expect(csv).toHaveLength(9);
    const column = header.indexOf('reward/mean');
    expect(csv.slice(1).map((line) => Number(line.split(',')[column]))).toEqual(
      grpo.map((row) => row.metrics['reward/mean']),
    );
    expect(
      readFileSync(join(project, 'runs/sft/metrics.csv'), 'utf8').trim().split('\n'),
    ).toHaveLength(181);
  });

  it('should write TensorBoard event files that read back (TFRecord framing, CRC-32C)', () => {
    const decoder = new TextDecoder('latin1');
    for (const [run, steps, tag] of [
      ['runs/sft', 180, 'loss'],
      ['runs/grpo', 8, 'reward/mean'],
    ] as const) {
      const records = readTfRecords(eventFile(join(project, run)));
      expect(decoder.decode(records[0]!)).toContain('brain.Event:2');
      const withTag = records.filter((record) => decoder.decode(record).includes(tag));
      expect(withTag.length).toBeGreaterThanOrEqual(steps);
    }
  });

  it('should write eval results and a run page', () => {
    const results = JSON.parse(
      readFileSync(join(project, 'runs/grpo/eval-results.json'), 'utf8'),
    ) as {
      prompts: number;
      n: number;
      curve: { k: number; passAtK: number; majAtK: number }[];
    };
    expect(results).toMatchObject({ prompts: 12, n: 4 });
    expect(results.curve.map((point) => point.k)).toEqual([1, 2, 4]);
    for (const point of results.curve) {
      expect(point.passAtK).toBeGreaterThanOrEqual(0);
      expect(point.passAtK).toBeLessThanOrEqual(1);
      expect(point.majAtK).toBeLessThanOrEqual(point.passAtK + 1e-12);
    }
    const html = readFileSync(join(project, 'runs/grpo/report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('reward/mean');
    expect(html).toContain('rlvr-config.yaml');
    // the run's settings with the trainer's defaults (effectiveGrpoConfig), not only the file's
    const recorded = readFileSync(join(project, 'runs/grpo/rlvr-config.yaml'), 'utf8');
    expect(recorded).toMatch(/^epsilonHigh: 0\.2$/m);
    expect(recorded).toMatch(/^scaleRewards: group$/m);
    expect(existsSync(join(project, 'runs/grpo/model/model.safetensors'))).toBe(true);
  });

  it('should run the README export examples', async () => {
    const lines = readmeBlock('## Export');
    expect(lines).toHaveLength(2);
    for (const line of lines) await shell(line, project);
    const gguf = readFileSync(join(project, 'exported', 'model.gguf'));
    expect(gguf.subarray(0, 4).toString('latin1')).toBe('GGUF');
    expect(existsSync(join(project, 'exported', 'onnx', 'model.onnx'))).toBe(true);
  });

  it('should refuse to rerun into the same folders without --overwrite, then replace with it', async () => {
    const again = run(process.execPath, [bin, 'grpo', '--config', 'grpo.yaml'], { cwd: project });
    await expect(again).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/refusing to write '.*runs\/grpo\/model'.*--overwrite/),
    });
    await expect(
      run(process.execPath, [bin, 'eval', '--config', 'eval.yaml'], { cwd: project }),
    ).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/eval-results\.json': the file exists; pass --overwrite/),
    });
    const results = join(project, 'runs/grpo/eval-results.json');
    const before = readFileSync(results, 'utf8');
    const replaced = await shell('rlvr eval --config eval.yaml --set n=2 --overwrite', project);
    expect(replaced.stdout).toMatch(/12 prompts × 2 samples/);
    expect(readFileSync(results, 'utf8')).not.toBe(before);
  });
});
