import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLoraAdapter } from '@rlvr/model';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { runLoraTask } from '../testing/lora-run.js';
import type { GrpoMetricRecord } from './grpo-trainer.js';

/** A metrics line without its wall-clock fields. */
function deterministic(line: string) {
  const record = JSON.parse(line) as GrpoMetricRecord;
  const metrics = Object.fromEntries(
    Object.entries(record.metrics).filter(
      ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
    ),
  );
  const { elapsedMs: _elapsed, ...rest } = record as GrpoMetricRecord & { elapsedMs?: number };
  return { ...rest, metrics };
}

const readLines = async (path: string) =>
  (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');

describe('GrpoTrainer with LoRA: kill after step 2 and resume (native engine, ONNX sampler)', () => {
  beforeAll(async () => {
    await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
  });

  it('logs the same steps as the uninterrupted run; checkpoints hold the adapter in PEFT files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-lora-resume-'));
    try {
      const whole = join(dir, 'whole');
      await runLoraTask(whole);
      const want = await readLines(join(whole, 'metrics.jsonl'));
      expect(want).toHaveLength(3);
      const checkpoints = await readdir(join(whole, 'checkpoints'));
      const last = join(whole, 'checkpoints', checkpoints.sort().at(-1)!);
      expect((await readdir(last)).sort()).toEqual([
        'adapter',
        'optimizer.safetensors',
        'state.json',
      ]);
      const adapter = await loadLoraAdapter(join(last, 'adapter'));
      expect(adapter.config).toMatchObject({ r: 4, alpha: 8, dropout: 0.1 });

      const killed = join(dir, 'killed');
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join('src', 'testing', 'lora-run.ts'), killed, '3'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += String(chunk);
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      // SIGKILL (no cleanup) once two steps are logged: during step 3
      let lines = 0;
      while (lines < 2 && child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        lines = (await readLines(join(killed, 'metrics.jsonl')).catch(() => [])).length;
      }
      expect(child.exitCode, stderr).toBeNull();
      child.kill('SIGKILL');
      await exited;
      const resumed = await runLoraTask(killed, { resume: true });
      expect(resumed.steps).toBe(3);
      const got = await readLines(join(killed, 'metrics.jsonl'));
      expect(got.map(deterministic)).toEqual(want.map(deterministic));
      expect(await readFile(join(killed, 'completions.jsonl'), 'utf8')).toBe(
        await readFile(join(whole, 'completions.jsonl'), 'utf8'),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
