import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTokenizer, loadCheckpoint } from '@rlvr/model';
import { type OpenAICompatibleServer, startOpenAICompatibleServer } from '@rlvr/openai/test';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './test/run-captured.js';

const root = mkdtempSync(join(tmpdir(), 'rlvr-cli-served-'));
const project = join(root, 'project');
const at = (...parts: string[]) => join(project, ...parts);
let server: OpenAICompatibleServer;
let backing: OnnxSampler;

beforeAll(async () => {
  expect((await cli('init', project)).code).toBe(0);
  // a reward the random model passes sometimes: the completion starts with a digit
  writeFileSync(
    at('digit.mjs'),
    'export default ({ completion }) => (/^[0-9]/.test(completion) ? 1 : 0);\n',
  );
  const checkpoint = await loadCheckpoint(at('model'));
  backing = await createOnnxSampler({ checkpoint, workers: 0 });
  server = await startOpenAICompatibleServer({
    sampler: backing,
    tokenizer: createTokenizer(checkpoint.tokenizer!),
    dialect: 'vllm',
    model: 'tiny-teacher',
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await backing?.close();
});

const dataset = (limit: number) =>
  `dataset={path: ${at('data/test.jsonl')}, columns: {prompt: question, answer: solution}, limit: ${limit}}`;

describe('rlvr with a served model', () => {
  it('should give rlvr eval --base-url the pass@k of the local sampler on the same model and seeds', async () => {
    const common = [
      '--set',
      dataset(6),
      '--set',
      `rewards=[{module: ${at('digit.mjs')}, name: digit}]`,
      '--set',
      'n=4',
      '--set',
      'batchSize=1',
      '--set',
      'maxNewTokens=4',
      '--set',
      'temperature=1',
      '--set',
      'seed=3',
    ];
    const local = await cli(
      'eval',
      '--set',
      `model=${at('model')}`,
      '--set',
      'sampler={workers: 0}',
      '--set',
      `outputDir=${at('eval-local')}`,
      ...common,
    );
    const served = await cli(
      'eval',
      '--base-url',
      server.baseURL,
      '--set',
      'model=tiny-teacher',
      '--set',
      `outputDir=${at('eval-served')}`,
      ...common,
    );
    expect(local.code).toBe(0);
    expect(served.code).toBe(0);
    const table = (out: string) => out.slice(out.indexOf('   k'));
    expect(table(served.stdout)).toBe(table(local.stdout));
    expect(local.stdout).toMatch(/mean reward 0\.\d*[1-9]/); // not a vacuous 0 = 0
    // the same samples, not just the same numbers
    const samples = (dir: string) => readFileSync(join(dir, 'eval-samples.jsonl'), 'utf8');
    expect(samples(at('eval-served'))).toBe(samples(at('eval-local')));
  });

  it('should generate from and vote over a served model (model: { baseURL, model, api })', async () => {
    const out = at('served-samples.jsonl');
    const generate = await cli(
      'generate',
      '--set',
      `model={baseURL: ${server.baseURL}, model: tiny-teacher, api: completions}`,
      '--set',
      dataset(3),
      '--set',
      `out=${out}`,
      '--set',
      'n=4',
      '--set',
      'maxNewTokens=3',
    );
    expect(generate).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('3 prompts × 4 completions'),
    });
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line: { completions: unknown[] }) => line.completions.length)).toEqual([
      4, 4, 4,
    ]);
    const vote = await cli(
      'vote',
      '--sample',
      '--base-url',
      server.baseURL,
      '--set',
      'model=tiny-teacher',
      '--set',
      dataset(3),
      '--set',
      'n=4',
      '--set',
      'maxNewTokens=3',
      '--ks',
      '1,2,4',
    );
    expect(vote.code).toBe(0);
    expect(vote.stdout).toMatch(/3 records with gold answers:\n\s+k\s+pass@k\s+maj@k\n\s+1 /);
    const ineffective = await cli(
      'generate',
      '--base-url',
      server.baseURL,
      '--set',
      'model=tiny-teacher',
      '--set',
      dataset(1),
      '--set',
      `out=${at('x.jsonl')}`,
      '--set',
      'maxNewTokens=2',
      '--set',
      'sampler={workers: 0}',
    );
    expect(ineffective).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("config key 'sampler'"),
    });
    const unknown = await cli(
      'generate',
      '--set',
      `model={baseURL: ${server.baseURL}, model: tiny-teacher, api: chat, concurency: 2}`,
      '--set',
      dataset(1),
      '--set',
      `out=${at('y.jsonl')}`,
      '--set',
      'maxNewTokens=2',
    );
    expect(unknown).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("'model.concurency'"),
    });
  });

  it('should distil a local student from a served teacher (SFT on its text) and refuse logit KD', async () => {
    const out = at('runs/distill-served');
    const args = [
      'distill',
      '--set',
      `teacher={baseURL: ${server.baseURL}, model: tiny-teacher, api: completions}`,
      '--set',
      `student=${at('model')}`,
      '--set',
      `dataset={path: ${at('data/train.jsonl')}, columns: {prompt: question, answer: solution}, limit: 6}`,
      '--set',
      `rewards=[{module: ${at('digit.mjs')}, name: digit}]`,
      '--set',
      `outputDir=${out}`,
      '--set',
      'traces={k: 4, sampling: {maxNewTokens: 3}}',
      '--set',
      'epochs=1',
      '--set',
      'batchSize=4',
      '-q',
    ];
    const run = await cli(...args);
    expect(run.stderr).toMatch(/distill: 24 traces \(0 prompts reused\), [1-9]\d* accepted/);
    expect(run).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^distill: \d+ traces, \d+ steps/),
    });
    expect(existsSync(join(out, 'model', 'config.json'))).toBe(true);
    const header = JSON.parse(readFileSync(join(out, 'traces.jsonl'), 'utf8').split('\n')[0]!);
    expect(JSON.stringify(header)).toContain('served:');
    const kd = await cli(
      ...args,
      '--set',
      `outputDir=${at('runs/distill-kd')}`,
      '--set',
      'loss={type: logits, divergence: forward-kl}',
    );
    expect(kd).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("config key 'loss.type'"),
    });
    expect(kd.stderr).toMatch(/teacher's token distribution/);
    expect(existsSync(at('runs/distill-kd'))).toBe(false);
  }, 120_000);
});
