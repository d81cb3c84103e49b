// Test helpers (not exported): a real Redis, fresh queue names, a tiny checkpoint, worker processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  parseLlamaConfig,
  saveCheckpoint,
} from '@rlvr/model';
import { Redis } from 'ioredis';

/** The test Redis (CI starts `redis-server --port 6390 --maxmemory-policy noeviction`). */
export const REDIS_URL = process.env.RLVR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6390';

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

/** A port nothing listens on now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A throw-away `redis-server` process of a test, which it can kill and start again. */
export type RedisServer = {
  readonly port: number;
  readonly url: string;
  /** Starts it (again) and waits until it answers. */
  start(): Promise<void>;
  /** SIGKILL: a crash (without persistence, everything in it is lost). */
  kill(): Promise<void>;
};

/**
 * A `redis-server` on `port` (a free one by default) with `noeviction`; no persistence, or with
 * `aofDir` an append-only file there, synced on every write (a restart keeps everything).
 */
export async function redisServer(
  options: { port?: number; aofDir?: string } = {},
): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  let child: ChildProcess | undefined;
  const persistence = options.aofDir
    ? ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', options.aofDir]
    : ['--appendonly', 'no'];
  const args = ['--port', String(port), '--save', '', ...persistence];
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn('redis-server', [...args, '--maxmemory-policy', 'noeviction'], {
        stdio: 'ignore',
      });
      for (let tries = 0; tries < 200; tries++) {
        const probe = new Redis(port, {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        probe.on('error', () => undefined);
        const up = await probe.ping().then(
          () => true,
          () => false,
        );
        probe.disconnect();
        if (up) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`redis-server on port ${port} did not start`);
    },
    async kill() {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
  };
}
