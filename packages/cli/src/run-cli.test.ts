import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGguf } from '@rlvr/model';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from './run-cli.js';
import { cli } from './test/run-captured.js';

const root = mkdtempSync(join(tmpdir(), 'rlvr-cli-'));
const project = join(root, 'project');
const at = (...parts: string[]) => join(project, ...parts);

beforeAll(async () => {
  expect((await cli('init', project)).code).toBe(0);
});

describe('runCli', () => {
  it('should give every subcommand a --help with usage and an example', async () => {
    expect(COMMANDS.map((command) => command.name)).toEqual([
      'init',
      'sft',
      'grpo',
      'distill',
      'generate',
      'eval',
      'vote',
      'report',
      'export',
    ]);
    for (const command of COMMANDS) {
      const { code, stdout } = await cli(command.name, '--help');
      expect(code).toBe(0);
      expect(stdout).toContain(`usage: rlvr ${command.name} `);
      expect(stdout).toMatch(/\nexample:\n {2}rlvr /);
    }
    const top = await cli('--help');
    expect(top.stdout).toContain('quick start:');
    expect((await cli()).code).toBe(2);
  });

  it('should name an unknown command, flag or argument', async () => {
    expect(await cli('grop')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`did you mean 'grpo'?`),
    });
    expect(await cli('grpo', '--learning-rate', '1')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`Unknown option '--learning-rate'`),
    });
    expect(await cli('report')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('expected RUN_DIR'),
    });
  });

  it('should name the key, the closest valid one and the file for a bad config', async () => {
    const path = at('bad.yaml');
    writeFileSync(path, 'model: model\nkl_coef: 0.1\n');
    const { code, stderr } = await cli('grpo', '--config', path);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `rlvr grpo: config key 'kl_coef' (in ${path}): unknown key (did you mean 'beta'?)\n`,
    );
    const json = at('bad.json');
    writeFileSync(json, JSON.stringify({ model: 'model', epoch: 2 }));
    expect((await cli('sft', '--config', json)).stderr).toContain(
      `config key 'epoch' (in ${json}): unknown key (did you mean 'epochs'?)`,
    );
    expect(
      (await cli('eval', '--config', at('eval.yaml'), '--set', 'sampler.worker=1')).stderr,
    ).toContain(
      `config key 'sampler.worker' (in --set): unknown key (did you mean 'sampler.workers'?)`,
    );
  });

  it('should name the key and its source when a package rejects a value', async () => {
    const { code, stderr } = await cli(
      'grpo',
      '--config',
      at('grpo.yaml'),
      '--set',
      'beta=-1',
      '--set',
      `outputDir=${at('runs/bad')}`,
      '--set',
      `model=${at('model')}`,
      '--set',
      `dataset.path=${at('data/train.jsonl')}`,
      '-q',
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /config key 'beta' \(in --set\): .*'config\.beta' of createGrpoTrainer\(\): expected a finite number >= 0, got -1/,
    );
    expect(existsSync(at('runs/bad'))).toBe(false);
  });

  it('should print the resolved config with defaults', async () => {
    const { code, stdout } = await cli(
      'grpo',
      '--config',
      at('grpo.yaml'),
      '--set',
      'beta=0.04',
      '--print-config',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^beta: 0\.04$/m);
    expect(stdout).toMatch(/^epsilonLow: 0\.2$/m);
    expect(stdout).toMatch(/^maxSteps: 8$/m);
    const sft = await cli('sft', '--print-config');
    expect(sft).toMatchObject({ code: 0, stdout: expect.stringMatching(/^batchSize: 8$/m) });
  });

  it('should refuse a non-empty folder for init without --force, and existing files without --overwrite', async () => {
    const dir = join(root, 'occupied');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    expect(await cli('init', dir)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('not empty; pass --force'),
    });
    writeFileSync(join(dir, 'sft.yaml'), 'mine');
    expect(await cli('init', dir, '--force')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`sft.yaml': the file exists; pass --overwrite`),
    });
    expect(readFileSync(join(dir, 'sft.yaml'), 'utf8')).toBe('mine');
    expect((await cli('init', dir, '--force', '--overwrite')).code).toBe(0);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('should fine-tune on a Parquet dataset with column mapping and log CSV', async () => {
    const parquet = at('data/sft.parquet');
    writeFileSync(
      parquet,
      new Uint8Array(
        parquetWriteBuffer({
          columnData: [
            { name: 'q', data: ['1+2=', '3+3=', '4+1='], type: 'STRING' },
            { name: 'r', data: ['3', '6', '5'], type: 'STRING' },
          ],
        }),
      ),
    );
    const out = at('runs/parquet-sft');
    const args = [
      'sft',
      '--config',
      at('sft.yaml'),
      '--set',
      `dataset={path: ${parquet}, columns: {prompt: q, completion: r}}`,
    ];
    const { code, stdout } = await cli(
      ...args,
      '--set',
      'epochs=2',
      '--set',
      'batchSize=2',
      '--set',
      `outputDir=${out}`,
      '--set',
      `model=${at('model')}`,
      '--report-to',
      'csv',
      '-q',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^sft: 4 steps/);
    const csv = readFileSync(join(out, 'metrics.csv'), 'utf8').trim().split('\n');
    expect(csv[0]).toMatch(/^step,elapsedMs,phase,loss,/);
    expect(csv.slice(1).map((line) => line.split(',')[0])).toEqual(['1', '2', '3', '4']);
    expect(existsSync(join(out, 'metrics.jsonl'))).toBe(false);
    const bad = await cli(
      ...args,
      '--set',
      `outputDir=${at('runs/x')}`,
      '--set',
      `model=${at('model')}`,
      '--set',
      `dataset.columns.completion=response`,
    );
    expect(bad).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`sft.parquet:1: no column 'response' for the completion`),
    });
  });

  it('should generate samples, vote over them, and export GGUF', async () => {
    const samples = at('samples.jsonl');
    const generate = await cli(
      'generate',
      '--set',
      `model=${at('model')}`,
      '--set',
      `dataset={path: ${at('data/test.jsonl')}, columns: {prompt: question, answer: solution}, limit: 3}`,
      '--set',
      `out=${samples}`,
      '--set',
      'n=4',
      '--set',
      'maxNewTokens=3',
      '--set',
      'sampler={workers: 0}',
    );
    expect(generate).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('3 prompts × 4 completions'),
    });
    const lines = readFileSync(samples, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { completions: unknown[] });
    expect(lines.map((line) => line.completions.length)).toEqual([4, 4, 4]);
    const vote = await cli('vote', samples, '--ks', '1,2,4');
    expect(vote.code).toBe(0);
    expect(vote.stdout).toMatch(/3 records with gold answers:\n\s+k\s+pass@k\s+maj@k\n\s+1 /);
    expect(
      (
        await cli(
          'generate',
          '--set',
          `model=${at('model')}`,
          '--set',
          `dataset=${at('data/test.jsonl')}`,
          '--set',
          `out=${samples}`,
          '--set',
          'maxNewTokens=2',
        )
      ).stderr,
    ).toContain("samples.jsonl': the file exists; pass --overwrite");
    const exported = at('exported');
    expect((await cli('export', at('model'), '--out', exported, '--dtype', 'f16')).code).toBe(0);
    const gguf = await readGguf(join(exported, 'model.gguf'));
    expect(gguf.metadata['general.architecture']).toBe('llama');
    expect((await cli('export', at('model'), '--out', exported)).stderr).toMatch(
      /model\.gguf.*overwrite/,
    );
    expect(
      (await cli('export', at('model'), '--out', exported, '--format', 'onnx', '--dtype', 'f16'))
        .code,
    ).toBe(2);
    expect((await cli('export', at('model'), '--out', exported, '--format', 'onnx')).code).toBe(0);
    expect(existsSync(join(exported, 'onnx', 'model.onnx'))).toBe(true);
  });

  it('should vote over rlvr-vote records and check values the CLI reads itself', async () => {
    const records = at('records.jsonl');
    writeFileSync(
      records,
      '\uFEFF{"id":1,"samples":["\\\\boxed{4}","4","5"],"gold":"4"}\r\n{"id":2,"samples":["7","7","1"],"gold":"8"}\r\n',
    );
    const vote = await cli('vote', records, '--out', at('votes.jsonl'));
    expect(vote.code).toBe(0);
    const votes = readFileSync(at('votes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { answer: string });
    expect(votes.map((v) => v.answer)).toEqual(['4', '7']);
    expect(vote.stdout).toMatch(
      /\n\s+1\s+0\.3333\s+0\.3333\n\s+2\s+0\.5000\s+0\.3333\n\s+3\s+0\.5000\s+0\.5000\n$/,
    );
    const bad = at('bad-records.jsonl');
    writeFileSync(bad, '{"id":1,"samples":["a"]}\n{"id":2}\n');
    expect(await cli('vote', bad)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('bad-records.jsonl:2:'),
    });
    const n0 = await cli('eval', '--config', at('eval.yaml'), '--set', 'n=0');
    expect(n0).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`config key 'n' (in --set)`),
    });
    const backend = await cli(
      'sft',
      '--config',
      at('sft.yaml'),
      '--set',
      `model=${at('model')}`,
      '--set',
      `dataset.path=${at('data/train.jsonl')}`,
      '--set',
      `outputDir=${at('runs/b')}`,
      '--set',
      'backend=gpu',
    );
    expect(backend).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`config key 'backend' (in --set)`),
    });
  });

  it('should distil a teacher into a student with a reward from a user module', async () => {
    const reward = at('accept-short.mjs');
    writeFileSync(reward, 'export default ({ completion }) => (completion.length <= 2 ? 1 : 0);\n');
    const out = at('runs/distill');
    const args = [
      'distill',
      '--set',
      `teacher=${at('model')}`,
      '--set',
      `student=${at('model')}`,
      '--set',
      `dataset={path: ${at('data/train.jsonl')}, columns: {prompt: question, answer: solution}, limit: 8}`,
      '--set',
      `rewards=[{module: ${reward}, name: short}]`,
      '--set',
      `outputDir=${out}`,
      '--set',
      'traces={k: 2, sampling: {maxNewTokens: 3}}',
      '--set',
      'sampler={workers: 0}',
      '--set',
      'epochs=1',
      '--set',
      'batchSize=4',
      '--report-to',
      'jsonl',
      '-q',
    ];
    const { code, stdout, stderr } = await cli(...args);
    expect(stderr).toMatch(/distill: 16 traces \(0 prompts reused\), \d+ accepted, \d+ kept/);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^distill: \d+ traces, \d+ steps/);
    const traces = readFileSync(join(out, 'traces.jsonl'), 'utf8').trim().split('\n');
    expect(traces).toHaveLength(17); // header + 8 prompts × 2
    expect(existsSync(join(out, 'model', 'config.json'))).toBe(true);
    expect(readFileSync(join(out, 'metrics.jsonl'), 'utf8')).toContain('"phase":"distill"');
    expect(await cli(...args)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--overwrite (replace) or --resume'),
    });
    const early = await cli(
      ...args,
      '--set',
      `outputDir=${at('runs/distill-bad')}`,
      '--set',
      'filter.prefer=longest',
    );
    expect(early).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`config key 'filter.prefer' (in --set)`),
    });
    expect(existsSync(at('runs/distill-bad'))).toBe(false);
    const logits = await cli(
      ...args,
      '--set',
      `outputDir=${at('runs/distill-logits')}`,
      '--set',
      'loss={type: logits, divergence: forward-kl, sftWeight: 0.5}',
    );
    expect(logits).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^distill: \d+ traces/),
    });
    const badLoss = await cli(
      ...args,
      '--set',
      `outputDir=${at('runs/distill-x')}`,
      '--set',
      'loss.type=kd',
    );
    expect(badLoss).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`config key 'loss.type' (in --set)`),
    });
    const unknown = await cli(...args, '--set', 'traces.samples=3');
    expect(unknown.stderr).toContain(`config key 'traces.samples' (in --set): unknown key`);
  });

  it('should stop at a safe point on Ctrl-C and continue with --resume without duplicate rows', async () => {
    const out = at('runs/interrupted');
    const args = [
      'sft',
      '--config',
      at('sft.yaml'),
      '--set',
      `model=${at('model')}`,
      '--set',
      `dataset.path=${at('data/train.jsonl')}`,
    ];
    const settings = [
      '--set',
      `outputDir=${out}`,
      '--set',
      'epochs=20',
      '--set',
      'saveEvery=3',
      '--report-to',
      'jsonl',
      '-q',
    ];
    const metrics = join(out, 'metrics.jsonl');
    const running = cli(...args, ...settings);
    for (
      let i = 0;
      i < 600 && !(existsSync(metrics) && readFileSync(metrics, 'utf8').split('\n').length > 5);
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.emit('SIGINT');
    const stopped = await running;
    expect(stopped).toMatchObject({ code: 130, stderr: expect.stringContaining('--resume') });
    const before = readFileSync(metrics, 'utf8').trim().split('\n').length;
    expect(before).toBeGreaterThan(4);
    expect(before).toBeLessThan(120);
    const resumed = await cli(...args, ...settings, '--resume');
    expect(resumed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^sft: 120 steps/) });
    const steps = readFileSync(metrics, 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step);
    expect(steps).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
  });
});
