import { ErrorCode, RlvrError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { createSandboxPool } from './pool.js';
import { HAS_BWRAP } from './sandbox-test-support.js';

describe('createSandboxPool', { timeout: 60_000 }, () => {
  it('should validate its options', () => {
    expect(() => createSandboxPool({ concurrency: 0 })).toThrow(/options\.concurrency/);
    expect(() => createSandboxPool({ maxQueue: -1 })).toThrow(/options\.maxQueue/);
  });

  it.skipIf(!HAS_BWRAP)(
    'should bound concurrency, queue with back-pressure and reject when full',
    async () => {
      const pool = createSandboxPool({ concurrency: 2, maxQueue: 2 });
      const options = {
        language: 'python' as const,
        program: 'import time\ntime.sleep(0.3)\ndef f():\n    return 1\n',
        tests: ['assert f() == 1'],
        limits: { wallTimeMs: 10_000 },
      };
      let maxRunning = 0;
      const runs = [] as Promise<unknown>[];
      for (let index = 0; index < 4; index++) {
        await pool.ready();
        runs.push(pool.run(options));
        maxRunning = Math.max(maxRunning, pool.running);
      }
      expect(pool.running).toBe(2);
      expect(pool.queued).toBe(2);
      const overflow = await pool.run(options).catch((error: unknown) => error);
      expect(RlvrError.isInstance(overflow) && overflow.code).toBe(ErrorCode.UNAVAILABLE);
      let readyResolved = false;
      const ready = pool.ready().then(() => {
        readyResolved = true;
      });
      expect(readyResolved).toBe(false);
      const results = (await Promise.all(runs)) as {
        verdict: string;
        timings: { queueMs: number };
      }[];
      await ready;
      expect(readyResolved).toBe(true);
      expect(results.map((result) => result.verdict)).toEqual(['pass', 'pass', 'pass', 'pass']);
      expect(maxRunning).toBe(2);
      expect(results[3]?.timings.queueMs).toBeGreaterThan(0);
      await pool.onIdle();
      expect(pool.running + pool.queued).toBe(0);
    },
  );
});
