// The LoRA kill-and-resume check at a real shape (issue 28): a 3-step GrpoTrainer run with
// createOnnxSampler and LoRA r 4 on every linear layer of the Qwen2.5-0.5B shape (random weights),
// uninterrupted, then again SIGKILLed during step 3 and resumed; the two logs must be equal.
// `pnpm --filter @rlvr/trainer exec tsx bench/lora-resume.bench.ts [shape]` (the test
// src/grpo/grpo-lora-resume.test.ts runs the same with the tiny model).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { deterministic, killDuringStep, readLines, runInChild } from '../src/testing/lora-run.js';
import { SHAPES } from './shapes.js';

const name = process.argv[2] ?? 'Qwen2.5-0.5B';
const shape = SHAPES[name];
if (!shape) throw new Error(`unknown shape ${name}: one of ${Object.keys(SHAPES).join(', ')}`);
const fields = { ...shape.config, max_position_embeddings: 64 };
const dir = await mkdtemp(join(tmpdir(), 'rlvr-lora-resume-bench-'));
try {
  const whole = join(dir, 'whole');
  let started = performance.now();
  // every run in its own process: each holds one model and one sampler, as a user's run would
  await runInChild(whole, { maxSteps: 3, config: fields });
  console.log(
    `${name}: uninterrupted 3 steps in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  const killed = join(dir, 'killed');
  started = performance.now();
  await killDuringStep(killed, { maxSteps: 3, after: 2, config: fields });
  console.log(`killed during step 3 after ${((performance.now() - started) / 1000).toFixed(0)} s`);
  started = performance.now();
  await runInChild(killed, { maxSteps: 3, config: fields });
  console.log(`resumed step 3 in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const want = (await readLines(join(whole, 'metrics.jsonl'))).map(deterministic);
  const got = (await readLines(join(killed, 'metrics.jsonl'))).map(deterministic);
  const sameCompletions =
    (await readFile(join(whole, 'completions.jsonl'), 'utf8')) ===
    (await readFile(join(killed, 'completions.jsonl'), 'utf8'));
  for (const row of got) {
    const m = row.metrics;
    console.log(
      `step ${row.step}: loss ${m.loss} reward/mean ${m['reward/mean']} kl ${m.kl} grad_norm ${m.grad_norm}`,
    );
  }
  const same = isDeepStrictEqual(got, want);
  console.log(`same steps as the uninterrupted run: ${same}; same completions: ${sameCompletions}`);
  if (!same || !sameCompletions) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
