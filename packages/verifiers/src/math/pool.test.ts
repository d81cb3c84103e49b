import { describe, expect, it } from 'vitest';
import { createMathVerifierPool } from './pool.js';
import { verifyMath } from './verify-math.js';

describe('createMathVerifierPool', () => {
  it('should give the same results as verifyMath, off the main thread', async () => {
    const pool = createMathVerifierPool({ size: 2, timeoutMs: 30_000 });
    try {
      const cases: [string, string][] = [
        ['so \\boxed{42}', '42'],
        ['\\boxed{\\frac{1}{2}}', '0.5'],
        ['\\boxed{1} or \\boxed{2}', '1'],
        ['#### 7', '8'],
        ['\\boxed{5}', '\\frac{1}{'],
      ];
      const results = await Promise.all(
        cases.map(([response, gold]) => pool.verify(response, gold)),
      );
      expect(results.map((result) => result.score)).toEqual(
        cases.map(([response, gold]) => verifyMath(response, gold).score),
      );
      expect(results.map((result) => result.score)).toEqual([1, 1, 0, 0, null]);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('should stop a check that exceeds its budget and keep serving', async () => {
    const pool = createMathVerifierPool({ size: 1, timeoutMs: 1 });
    try {
      const huge = `${'\\boxed{1} '.repeat(800_000)}`; // ~8 MB: cannot finish in 1 ms
      const slow = await pool.verify(huge, '1');
      expect(slow.score).toBe(0);
      expect(slow.violations).toEqual(['timeout']);
    } finally {
      await pool.close();
    }
    const roomy = createMathVerifierPool({ size: 1, timeoutMs: 30_000 });
    try {
      expect((await roomy.verify('\\boxed{3}', 3)).score).toBe(1);
    } finally {
      await roomy.close();
    }
  }, 60_000);

  it('should validate arguments and reject after close', async () => {
    expect(() => createMathVerifierPool({ size: 0 })).toThrow(/'options.size'/);
    expect(() => createMathVerifierPool({ timeoutMs: 0.5 })).toThrow(/'options.timeoutMs'/);
    const pool = createMathVerifierPool({ size: 1 });
    await expect(pool.verify(1 as unknown as string, '1')).rejects.toThrow(/'response'/);
    await pool.close();
    await expect(pool.verify('1', '1')).rejects.toMatchObject({ code: 'ABORTED' });
  }, 60_000);
});
