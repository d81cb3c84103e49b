// The Redis of the tests (no other dependency: the vitest global setup imports it).
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';

/** Whether `name` is an executable on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((directory) => {
    if (!directory) return false;
    try {
      accessSync(join(directory, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether `redis-server` is installed: the tests that start their own servers need it. */
export const HAS_REDIS_SERVER = onPath('redis-server');

/**
 * The test Redis: `RLVR_TEST_REDIS_URL` (CI starts one on port 6390), else the throw-away server
 * that `redis-global-setup.ts` started for this run (it sets the variable).
 */
export const REDIS_URL = process.env.RLVR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6390';

/**
 * Whether the tests that use {@link REDIS_URL} can run: a Redis was given or one was started.
 * Without redis-server installed they skip (the global setup printed how to install it).
 */
export const HAS_REDIS = process.env.RLVR_TEST_REDIS_URL !== undefined;

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
