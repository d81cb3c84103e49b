import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { servedTinyModel } from '../src/__fixtures__/tiny-model.js';
import { sampleServedModel } from './quickstart.js';

const EXAMPLE = new URL('./quickstart.ts', import.meta.url);
const README = new URL('../README.md', import.meta.url);

describe('examples/quickstart.ts (the README example)', () => {
  it.each([
    ['vllm', false, 'n'],
    ['llama-server', false, 'n'],
    ['llama-server', true, 'parallel'],
  ] as const)(
    'should sample a %s-shaped server (refuses n: %s)',
    async (dialect, refuseN, strategy) => {
      const served = await servedTinyModel({ dialect, refuseN });
      try {
        const result = await sampleServedModel(served.server.baseURL, 'tiny');
        expect(result.server).toBe(dialect);
        expect(result.nStrategy).toBe(strategy);
        expect(result.behaviourLogprobs).toBe(false);
        expect(result.tokenIds.length).toBeGreaterThan(0);
        expect(result.logprobs).toHaveLength(result.tokenIds.length);
        expect(result.topLogprobs!.every((row) => row.length === 5)).toBe(true);
        // the backing model's own sample for prompt 0 (seed 0, sample 0 of n = 8)
        const [group] = await served.local.sample({
          prompts: ['12+30='],
          n: refuseN ? 1 : 8,
          maxNewTokens: 64,
          temperature: 0.8,
          topP: 0.95,
          seed: 0,
        });
        expect(result.text).toBe(group![0]!.text);
      } finally {
        await served.close();
      }
    },
  );

  it("should be exactly the README's first code block", async () => {
    const readme = await readFile(README, 'utf8');
    expect(/```ts\n([\s\S]*?)```/.exec(readme)?.[1]).toBe(await readFile(EXAMPLE, 'utf8'));
  });
});
