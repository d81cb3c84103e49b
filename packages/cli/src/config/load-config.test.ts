import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/config-error.js';
import { type ConfigSpec, parseSet, resolveConfig } from './load-config.js';

const spec: ConfigSpec = {
  known: ['beta', 'maxSteps', 'schedule', 'dataset', 'outputDir'],
  nested: { dataset: ['path', 'columns'] },
  defaults: { beta: 0, schedule: { learningRate: 1e-6, schedule: 'constant' } },
  required: ['maxSteps'],
};

function file(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rlvr-config-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function errorOf(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!ConfigError.isInstance(error))
    throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error;
}

describe('parseSet', () => {
  it('should parse dotted keys and typed values', () => {
    expect(parseSet('beta=0.04')).toEqual({ path: ['beta'], value: 0.04 });
    expect(parseSet('schedule.learningRate=1e-3')).toEqual({
      path: ['schedule', 'learningRate'],
      value: 0.001,
    });
    expect(parseSet('shuffle=false').value).toBe(false);
    expect(parseSet('reportTo=[jsonl, csv]').value).toEqual(['jsonl', 'csv']);
    expect(parseSet('dataset={path: a.csv}').value).toEqual({ path: 'a.csv' });
    expect(parseSet('model=runs/sft').value).toBe('runs/sft');
    expect(parseSet('stop=').value).toBe('');
  });

  it('should reject text without key=value', () => {
    expect(() => parseSet('beta')).toThrow(/expected key=value/);
    expect(() => parseSet('a..b=1')).toThrow(/dotted path/);
  });
});

describe('resolveConfig', () => {
  it('should merge defaults, the YAML file (BOM, CRLF) and --set in that order', async () => {
    const path = file(
      'grpo.yaml',
      '\uFEFFbeta: 0.1\r\nmaxSteps: 5\r\nschedule:\r\n  learningRate: 0.001\r\n',
    );
    const config = await resolveConfig(spec, {
      file: path,
      sets: ['maxSteps=7', 'schedule.warmupSteps=2'],
    });
    expect(config.values).toEqual({
      beta: 0.1,
      maxSteps: 7,
      schedule: { learningRate: 0.001, schedule: 'constant', warmupSteps: 2 },
    });
    expect(config.origins.get('beta')).toBe(path);
    expect(config.origins.get('maxSteps')).toBe('--set');
  });

  it('should read JSON configs', async () => {
    const path = file('c.json', '{"maxSteps": 3, "outputDir": "out"}');
    expect((await resolveConfig(spec, { file: path })).values.outputDir).toBe('out');
  });

  it('should name the key, the closest valid one and the file for an unknown key', async () => {
    const path = file('grpo.yaml', 'maxSteps: 5\nkl_coef: 0.1\n');
    const error = await errorOf(resolveConfig(spec, { file: path }));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.key).toBe('kl_coef');
    expect(error.source).toBe(path);
    expect(error.message).toContain(`did you mean 'beta'?`);
    expect(error.message).toContain(path);
  });

  it('should name --set as the source of an unknown key there, and check nested keys', async () => {
    const error = await errorOf(resolveConfig(spec, { sets: ['maxStep=3'] }));
    expect(error.message).toBe(
      `config key 'maxStep' (in --set): unknown key (did you mean 'maxSteps'?)`,
    );
    const nested = await errorOf(
      resolveConfig(spec, { sets: ['maxSteps=1', 'dataset.pth=a.jsonl'] }),
    );
    expect(nested.message).toContain(`'dataset.pth'`);
    expect(nested.message).toContain(`did you mean 'dataset.path'?`);
  });

  it('should require required keys and reject malformed files', async () => {
    expect((await errorOf(resolveConfig(spec, {}))).message).toMatch(/'maxSteps'.*required/);
    const broken = file('bad.yaml', 'beta: [1\n');
    expect((await errorOf(resolveConfig(spec, { file: broken }))).message).toContain(broken);
    const list = file('list.yaml', '- 1\n- 2\n');
    expect((await errorOf(resolveConfig(spec, { file: list }))).message).toMatch(/mapping/);
  });
});
