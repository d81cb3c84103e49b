import { Redis } from 'ioredis';
import { QueueUnavailableError } from '../errors/queue-unavailable-error.js';

/** Default Redis URL when none is given (a local server). */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * Finished jobs BullMQ keeps (then deletes the oldest): results are read from the completion
 * event, so these only bound Redis memory and keep recent failures inspectable.
 */
export const KEEP_COMPLETED = { age: 3600, count: 10_000 } as const;
export const KEEP_FAILED = { age: 7 * 24 * 3600, count: 10_000 } as const;

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/**
 * Opens an ioredis connection for BullMQ. Workers and event listeners use blocking commands and
 * need `maxRetriesPerRequest: null` (BullMQ refuses them otherwise); producers fail fast instead.
 */
export function createRedisConnection(url: string, role: 'producer' | 'worker'): Redis {
  return new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: role === 'worker' ? null : 3,
    enableReadyCheck: true,
    connectTimeout: 5_000,
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Connects and checks that Redis is usable for a queue: it answers, and its `maxmemory-policy` is
 * `noeviction` (any other policy lets Redis delete queued jobs under memory pressure). A server
 * that forbids `CONFIG GET` (some managed services) is accepted as is.
 * @throws {QueueUnavailableError} `reason: 'unreachable'` or `'eviction-policy'`.
 */
export async function checkRedis(connection: Redis, url: string, timeoutMs = 5_000): Promise<void> {
  const shown = redactUrl(url);
  try {
    if (connection.status === 'wait') await withTimeout(connection.connect(), timeoutMs, 'Redis');
    await withTimeout(connection.ping(), timeoutMs, 'Redis PING');
  } catch (error) {
    connection.disconnect();
    throw new QueueUnavailableError({
      reason: 'unreachable',
      url: shown,
      detail: `it is unreachable (${error instanceof Error ? error.message : String(error)}); start it (redis-server --maxmemory-policy noeviction) or pass the right URL`,
      cause: error,
    });
  }
  let policy: string | undefined;
  try {
    const reply = (await connection.config('GET', 'maxmemory-policy')) as string[];
    policy = reply[1];
  } catch {
    policy = undefined; // CONFIG disabled: cannot check
  }
  if (policy !== undefined && policy !== 'noeviction') {
    connection.disconnect();
    throw new QueueUnavailableError({
      reason: 'eviction-policy',
      url: shown,
      detail: `its maxmemory-policy is '${policy}', which lets Redis evict queued jobs; set it to 'noeviction' (redis-cli CONFIG SET maxmemory-policy noeviction)`,
    });
  }
}

/** Opens and checks a connection (see {@link checkRedis}). */
export async function connectRedis(url: string, role: 'producer' | 'worker'): Promise<Redis> {
  const connection = createRedisConnection(url, role);
  // an unreachable server otherwise logs "Unhandled error event" on every reconnect attempt
  connection.on('error', () => undefined);
  await checkRedis(connection, url);
  return connection;
}
