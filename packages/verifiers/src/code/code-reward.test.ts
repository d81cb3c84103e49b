import { describe, expect, it } from 'vitest';
import { createCodeReward } from './code-reward.js';
import { HAS_BWRAP } from './sandbox-test-support.js';
import type { RunTestsResult } from './types.js';

const prompt = 'Write square(x).';

describe('createCodeReward', { timeout: 60_000 }, () => {
  it('should validate its options at creation', () => {
    expect(() => createCodeReward({ language: 'go' as 'python' })).toThrow(/options\.language/);
    expect(() => createCodeReward({ language: 'python', blockedReward: Number.NaN })).toThrow(
      /options\.blockedReward/,
    );
  });

  it.skipIf(!HAS_BWRAP)('should pass the host-tool options through to runTests', async () => {
    const seen: RunTestsResult[] = [];
    const reward = createCodeReward({
      language: 'python',
      allowWeakerLimits: true,
      prlimitPath: '/nonexistent/prlimit',
      limits: { wallTimeMs: 8000 },
      onResult: (result) => seen.push(result),
    });
    const completion = '```python\ndef square(x):\n    return x * x\n```';
    expect(await reward({ prompt, completion, answer: ['assert square(3) == 9'] })).toBe(1);
    expect(seen[0]?.isolation.prlimit).toBe(null);
    expect(seen[0]?.isolation.limitsApplied.cpuTimeMs).toBe(false);
  });

  it('should return null without tests and 0 without a code block', async () => {
    const reward = createCodeReward({ language: 'python' });
    expect(await reward({ prompt, completion: '```python\nx=1\n```' })).toBeNull();
    expect(await reward({ prompt, completion: 'no code here', answer: ['assert True'] })).toBe(0);
  });

  it.skipIf(!HAS_BWRAP)(
    'should score completions, with partial credit and a blocked penalty',
    async () => {
      const results: string[] = [];
      const reward = createCodeReward({
        language: 'python',
        partialCredit: true,
        blockedReward: -1,
        limits: { wallTimeMs: 8000 },
        onResult: (result) => results.push(result.verdict),
      });
      const answer = { tests: ['assert square(2) == 4', 'assert square(3) == 9'] };
      const good = '```python\ndef square(x):\n    return x * x\n```';
      const half = '```python\ndef square(x):\n    return 4\n```';
      const evil =
        '```python\nimport os\ntry:\n    os.system("true")\nexcept Exception:\n    pass\ndef square(x):\n    return x * x\n```';
      expect(await reward({ prompt, completion: good, answer })).toBe(1);
      expect(await reward({ prompt, completion: half, answer })).toBe(0.5);
      expect(await reward({ prompt, completion: evil, answer })).toBe(-1);
      expect(results).toEqual(['pass', 'fail', 'blocked']);
    },
  );
});
