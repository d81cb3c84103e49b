// The LoRA kill-and-resume run (test-only): the max-digit task on the native engine, LoRA on
// every linear layer with dropout, β > 0 (the reference is the base), the ONNX rollout engine.
// Child process use: `node --import tsx lora-run.ts <dir> <maxSteps> [config.json fields]`: the
// fields (a real checkpoint's shape, e.g. the bench's Qwen2.5-0.5B) replace the tiny model's; the
// task's tokenizer only ever emits its own ids, the sampler may draw any id of the shape's vocab.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  createTokenizer,
  type ModelConfig,
  parseModelConfig,
} from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { selectBackend } from '../backend/select-backend.js';
import { createGrpoTrainer } from '../grpo/create-grpo-trainer.js';
import type { GrpoConfig } from '../grpo/grpo-config.js';
import type { GrpoMetricRecord } from '../grpo/grpo-trainer.js';
import { createLlamaModel } from '../model/llama-model.js';
import { maxDigitTask } from './grpo-task.js';

export const LORA_RESUME_CONFIG: GrpoConfig = {
  maxSteps: 3,
  promptsPerStep: 3,
  groupSize: 4,
  maxNewTokens: 3,
  temperature: 1,
  seed: 5,
  beta: 0.04,
  numIterations: 2,
  schedule: { learningRate: 2e-2 },
  lora: { r: 4, alpha: 8, dropout: 0.1, targetModules: 'all-linear', seed: 3 },
  saveEvery: 1,
  keepLast: 2,
  quiet: true,
};

/**
 * The task's characters and then distinct code points up to `vocabSize` (every id the sampler can
 * draw at a real shape decodes to one character).
 */
function wideTokenizer(vocabSize: number) {
  const base = '0123456789>';
  const reserved =
    createTokenizer(buildCharTokenizer({ characters: base })).vocabSize - base.length;
  const characters = [...base];
  for (let code = 0x4e00; characters.length < vocabSize - reserved; code++) {
    if ((code >= 0xd800 && code <= 0xdfff) || (code >= 0xfdd0 && code <= 0xfdef)) continue;
    if ((code & 0xfffe) === 0xfffe) continue;
    characters.push(String.fromCodePoint(code));
  }
  return buildCharTokenizer({ characters });
}

/** Runs (or resumes) the LoRA run in `outputDir`. @internal */
export async function runLoraTask(
  outputDir: string,
  options: { resume?: boolean; maxSteps?: number; config?: ModelConfig } = {},
) {
  const task = maxDigitTask();
  const real = options.config;
  const checkpoint = {
    // a real shape gets Hugging Face's initializer_range (0.02)
    ...createRandomCheckpoint(real ?? task.config, { seed: 3, std: real ? 0.02 : 0.1 }),
    tokenizer: real ? wideTokenizer(real.vocab_size) : task.files,
  };
  // at a real shape random weights almost never draw a digit: a reward on the first character
  // (any of the vocabulary's) gives the groups different rewards, so the updates are not zero
  const rewards = real
    ? [
        ...task.rewards,
        {
          name: 'parity',
          fn: ({ completion }: { completion: string }) => (completion.codePointAt(0) ?? 0) % 2,
        },
      ]
    : task.rewards;
  const model = await createLlamaModel(checkpoint, { engine: 'native' });
  const sampler = await createOnnxSampler({ checkpoint, workers: 1 });
  const grpo = await createGrpoTrainer({
    model,
    sampler,
    dataset: task.records.slice(0, 20),
    rewards,
    config: { ...LORA_RESUME_CONFIG, maxSteps: options.maxSteps ?? 3, outputDir },
    ...(options.resume ? { resume: true } : {}),
  });
  try {
    return await grpo.train();
  } finally {
    grpo.dispose();
    model.dispose();
    await sampler.close();
  }
}

/** A metrics line without its wall-clock fields. @internal */
export function deterministic(line: string) {
  const record = JSON.parse(line) as GrpoMetricRecord;
  const metrics = Object.fromEntries(
    Object.entries(record.metrics).filter(
      ([key]) => !key.startsWith('time/') && !key.startsWith('tokens_per_second/'),
    ),
  );
  const { elapsedMs: _elapsed, ...rest } = record as GrpoMetricRecord & { elapsedMs?: number };
  return { ...rest, metrics };
}

/** The non-empty lines of a file. @internal */
export const readLines = async (path: string) =>
  (await readFile(path, 'utf8')).split('\n').filter((line) => line !== '');

/** Starts the LoRA task (this file) in a child process; `stderr()` is what it wrote so far. */
function spawnRun(
  outputDir: string,
  options: { maxSteps: number; config?: Record<string, unknown> },
): { child: ChildProcess; stderr: () => string } {
  const args = [join(import.meta.dirname, 'lora-run.ts'), outputDir, String(options.maxSteps)];
  if (options.config) args.push(JSON.stringify(options.config));
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (chunk) => {
    text += String(chunk);
  });
  return { child, stderr: () => text };
}

/** Runs the LoRA task in its own process to the end (`maxSteps`), resuming what `outputDir` holds. */
export async function runInChild(
  outputDir: string,
  options: { maxSteps: number; config?: Record<string, unknown> },
): Promise<void> {
  const { child, stderr } = spawnRun(outputDir, options);
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  if (code !== 0)
    throw new Error(`the run failed (${signal ?? `exit code ${code}`}):\n${stderr()}`);
}

/**
 * Runs the task for `maxSteps` in a child process and SIGKILLs it (no cleanup) as soon as `after`
 * steps are logged, i.e. during step `after + 1`. Resolves once it is dead;
 * throws if the child ended by itself first. @internal
 */
export async function killDuringStep(
  outputDir: string,
  options: { maxSteps: number; after: number; config?: Record<string, unknown> },
): Promise<void> {
  const { child, stderr } = spawnRun(outputDir, options);
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  let lines = 0;
  const running = () => child.exitCode === null && child.signalCode === null;
  while (lines < options.after && running()) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    lines = (await readLines(join(outputDir, 'metrics.jsonl')).catch(() => [])).length;
  }
  if (!running()) {
    const how = child.signalCode ?? `exit code ${child.exitCode}`;
    throw new Error(`the run ended (${how}) before it was killed:\n${stderr()}`);
  }
  child.kill('SIGKILL');
  await exited;
}

if (process.argv[1]?.endsWith('lora-run.ts') && process.argv.length >= 4) {
  const [dir, steps, fields] = process.argv.slice(2);
  await selectBackend({ candidates: ['wasm'], matMul: 'backend' });
  await runLoraTask(dir!, {
    resume: true,
    maxSteps: Number(steps),
    ...(fields ? { config: parseModelConfig(JSON.parse(fields)) } : {}),
  });
}
