import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { TraceSampler } from '../src/testing/trace-sampler.js';
import { answerWithDeepConf } from './deepconf.js';

const EXAMPLE = new URL('./deepconf.ts', import.meta.url);
const README = new URL('../README.md', import.meta.url);

describe('examples/deepconf.ts (the README DeepConf example)', () => {
  it('should answer with the confident minority and stop low-confidence traces early', async () => {
    // simulated traces: 40% answer 42 with confidence 3, 60% answer 17 with confidence 1.5
    let next = 0;
    const sampler = new TraceSampler(() => {
      const correct = next++ % 5 < 2;
      return { answer: correct ? '42' : '17', confidences: new Array(300).fill(correct ? 3 : 1.5) };
    });
    const result = await answerWithDeepConf(sampler, 'What is 6 * 7?', { windowSize: 64 });
    expect(result.answer).toBe('42'); // plain majority would say 17
    expect(result.offlineAnswer).toBe('42');
    expect(result.earlyStopped).toBeGreaterThan(0);
    expect(result.stoppedBecause).toBe('consensus');
    expect(result.tokensUsed).toBeLessThan(result.tracesUsed * 300);
  });

  it("should be exactly the README's DeepConf code block", async () => {
    const readme = await readFile(README, 'utf8');
    const section = readme.slice(readme.indexOf('## Confidence-aware voting (DeepConf)'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBe(await readFile(EXAMPLE, 'utf8'));
  });
});
