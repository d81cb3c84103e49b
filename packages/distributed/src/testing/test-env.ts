// Test helpers (not exported): a real Redis, fresh queue names, a tiny checkpoint, worker processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  parseLlamaConfig,
  saveCheckpoint,
} from '@rlvr/model';

let counter = 0;
/** A queue name no other test (or earlier run) uses. */
export function freshQueue(label: string): string {
  counter += 1;
  return `test-${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export const CHARACTERS = '0123456789+= ';

/** Saves a tiny random Llama checkpoint with a char tokenizer into `dir`. */
export async function saveTinyCheckpoint(
  dir: string,
  size: { hidden?: number; layers?: number; positions?: number } = {},
): Promise<void> {
  const tokenizer = buildCharTokenizer({ characters: CHARACTERS });
  const hidden = size.hidden ?? 32;
  const config = parseLlamaConfig({
    hidden_size: hidden,
    num_hidden_layers: size.layers ?? 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: hidden * 2,
    vocab_size: 4 + CHARACTERS.length,
    max_position_embeddings: size.positions ?? 64,
    tie_word_embeddings: true,
  });
  await saveCheckpoint(dir, {
    ...createRandomCheckpoint(config, { seed: 1, std: 0.1 }),
    tokenizer,
  });
}

const CLI = fileURLToPath(new URL('../cli.ts', import.meta.url));

/** A `rlvr-worker rollout` process (run from the sources through tsx). */
export type WorkerProcess = { child: ChildProcess; output: () => string; stop(): Promise<void> };

/** Spawns `rlvr-worker <command> ...args` and waits until it is ready. */
export async function spawnWorker(
  args: string[],
  command: 'rollout' | 'verify' = 'rollout',
  timeoutMs = 30_000,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, command, ...args], {
    cwd: join(fileURLToPath(new URL('.', import.meta.url)), '..', '..'),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: kill the worker and its sandboxed children together
  });
  let text = '';
  child.stdout!.on('data', (chunk) => {
    text += String(chunk);
  });
  child.stderr!.on('data', (chunk) => {
    text += String(chunk);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready:\n${text}`)), timeoutMs);
    const check = () => {
      if (text.includes('ready on queue')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code}:\n${text}`));
    });
  });
  return {
    child,
    output: () => text,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await exited;
    },
  };
}

export {
  freePort,
  HAS_REDIS,
  HAS_REDIS_SERVER,
  REDIS_URL,
  type RedisServer,
  redisServer,
} from './redis-test-server.js';
