import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configFromArgs, runCli } from './cli.js';
import { DEFAULT_CONFIG } from './config.js';
import { runTeacherStudent } from './run.js';

/** Every file under `dir` with a hash of its bytes and its mtime. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (folder: string) => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        out[`${relative(dir, path)}/`] = 'dir';
        await walk(path);
      } else {
        const hash = createHash('sha256')
          .update(await readFile(path))
          .digest('hex');
        out[relative(dir, path)] = `${hash} ${(await stat(path)).mtimeMs}`;
      }
    }
  };
  await walk(dir);
  return out;
}

/** A finished run's folder (what the files hold does not matter to these checks). */
async function fakeFinishedRun(dir: string): Promise<void> {
  await mkdir(join(dir, 'phases'), { recursive: true });
  await mkdir(join(dir, 'checkpoints', 'rl-teacher'), { recursive: true });
  await mkdir(join(dir, 'grpo', 'teacher', 'checkpoints'), { recursive: true });
  await writeFile(join(dir, 'config.json'), `${JSON.stringify({ finished: true })}\n`);
  await writeFile(join(dir, 'traces.jsonl'), '{"promptId":"train-0","completion":"…"}\n');
  await writeFile(join(dir, 'phases', 'grpo-teacher.json'), '{"phase":"grpo-teacher"}\n');
  await writeFile(join(dir, 'checkpoints', 'rl-teacher', 'config.json'), '{}\n');
  await writeFile(join(dir, 'grpo', 'teacher', 'metrics.jsonl'), '{"step":1}\n');
  await writeFile(join(dir, 'report.json'), '{"version":1}\n');
}

describe('nothing on disk changes until every flag and the whole config are valid', () => {
  let dir: string;
  let before: Record<string, string>;
  const err: string[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rlvr-teacher-student-cli-'));
    await fakeFinishedRun(dir);
    before = await snapshot(dir);
    err.length = 0;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const rejects = async (argv: string[], message: RegExp) => {
    const code = await runCli(['--out', dir, '--fresh', ...argv], {
      out: () => {},
      err: (text) => err.push(text),
      progress: 'silent',
    });
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(message);
    expect(await snapshot(dir)).toEqual(before);
  };

  const configFile = async (config: unknown) => {
    const path = join(dir, '..', `${dir.split('/').at(-1)}-config.json`);
    await writeFile(path, JSON.stringify(config));
    return path;
  };

  it('a student over a quarter of the teacher, with --fresh, keeps the finished run (it wiped traces.jsonl)', async () => {
    await rejects(['--student', '256x4'], /'student'.*at most 1\/4 of the teacher/);
  });

  it('unknown or misspelled flags keep the finished run and name the right flag', async () => {
    await rejects(['--grpo-steps', '5'], /--grpo-steps.*did you mean '--max-steps'/);
    await rejects(['--frobnicate'], /--frobnicate/);
    await rejects(['--seed', 'x'], /--seed/);
  });

  it('a config file with an old or misspelled key keeps the finished run and suggests the trainer name', async () => {
    const path = await configFile({ grpo: { klCoefficient: 0.01 } });
    try {
      await rejects(['--config', path], /grpo\.klCoefficient.*did you mean 'beta'/);
      await writeFile(path, JSON.stringify({ grpo: { steps: 10 } }));
      await rejects(['--config', path], /grpo\.steps.*did you mean 'maxSteps'/);
      await writeFile(path, JSON.stringify({ grpo: { schedule: { learning_rate: 1e-3 } } }));
      await rejects(
        ['--config', path],
        /grpo\.schedule\.learning_rate.*did you mean 'learningRate'/,
      );
      await writeFile(path, JSON.stringify({ distill: { epoch: 3 } }));
      await rejects(['--config', path], /distill\.epoch.*did you mean 'epochs'/);
    } finally {
      await rm(path, { force: true });
    }
  });

  it('a trainer setting GrpoTrainer rejects is caught before anything is written, named as grpo.*', async () => {
    const path = await configFile({ grpo: { lossAggregation: 'sum', maxSteps: 3 } });
    try {
      await rejects(['--config', path], /'grpo\.lossAggregation'/);
      await writeFile(path, JSON.stringify({ grpo: { dynamicSampling: { maxRounds: 0 } } }));
      await rejects(['--config', path], /'grpo\.dynamicSampling\.maxRounds'/);
    } finally {
      await rm(path, { force: true });
    }
  });

  it('runTeacherStudent itself validates before --fresh or config.json', async () => {
    const { config } = configFromArgs(['--out', dir]);
    await expect(
      runTeacherStudent({
        config: { ...config, grpo: { ...config.grpo, beta: -1 } },
        fresh: true,
        progress: 'silent',
        log: () => {},
      }),
    ).rejects.toThrow(/grpo\.beta/);
    await expect(
      runTeacherStudent({
        config: { ...config, student: { ...DEFAULT_CONFIG.teacher } },
        fresh: true,
        progress: 'silent',
        log: () => {},
      }),
    ).rejects.toThrow(/'student'/);
    expect(await snapshot(dir)).toEqual(before);
  });
});

describe('the claims phase runs by default', () => {
  it('is on unless --no-claims, and --claims with --no-claims is refused', () => {
    expect(configFromArgs([]).config.claims.enabled).toBe(true);
    expect(configFromArgs(['--quick']).config.claims.enabled).toBe(true);
    expect(configFromArgs(['--no-claims']).config.claims.enabled).toBe(false);
    expect(configFromArgs(['--claims']).config.claims.enabled).toBe(true);
    expect(() => configFromArgs(['--claims', '--no-claims'])).toThrow(/--no-claims/);
  });
});
