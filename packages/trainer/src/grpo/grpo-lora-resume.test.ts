import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLoraAdapter } from '@rlvr/model';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { deterministic, killDuringStep, readLines, runLoraTask } from '../testing/lora-run.js';

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
      // SIGKILL (no cleanup) once two steps are logged: during step 3
      await killDuringStep(killed, { maxSteps: 3, after: 2 });
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
