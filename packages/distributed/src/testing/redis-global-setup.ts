// vitest globalSetup: the Redis every test file of this package shares.
// - RLVR_TEST_REDIS_URL set (CI starts one on port 6390): used as it is.
// - else, redis-server on PATH: one throw-away server on a free port for this run (no
//   persistence, noeviction), killed at the end; its URL reaches the test files through
//   RLVR_TEST_REDIS_URL.
// - else: the Redis tests skip (test-env.ts), with one line saying how to install it.
import { HAS_REDIS_SERVER, redisServer } from './redis-test-server.js';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.RLVR_TEST_REDIS_URL) return undefined;
  if (!HAS_REDIS_SERVER) {
    console.warn(
      '[@rlvr/distributed] SKIPPING the Redis tests: redis-server is not on PATH. ' +
        'Install it with `apt-get install redis-server` (any Redis >= 6.2 on PATH) to run them, ' +
        'or point RLVR_TEST_REDIS_URL at a running one.',
    );
    return undefined;
  }
  const server = await redisServer();
  await server.start();
  process.env.RLVR_TEST_REDIS_URL = server.url;
  return async () => {
    await server.kill();
  };
}
