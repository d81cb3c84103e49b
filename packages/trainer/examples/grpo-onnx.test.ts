import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildCharTokenizer,
  createRandomCheckpoint,
  parseLlamaConfig,
  saveCheckpoint,
} from '@rlvr/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trainMath } from './grpo-onnx.js';

const EXAMPLE = new URL('./grpo-onnx.ts', import.meta.url);
const README = new URL('../README.md', import.meta.url);

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-example-grpo-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('examples/grpo-onnx.ts (the README headline example)', () => {
  it('should train 2 steps on a tiny random model and write the run files', async () => {
    const tokenizer = buildCharTokenizer({ characters: '0123456789+= ' });
    const config = parseLlamaConfig({
      hidden_size: 32,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      intermediate_size: 64,
      vocab_size: 4 + 13,
      max_position_embeddings: 32,
      tie_word_embeddings: true,
    });
    const checkpointDir = join(root, 'model');
    await saveCheckpoint(checkpointDir, {
      ...createRandomCheckpoint(config, { seed: 1, std: 0.1 }),
      tokenizer,
    });
    const records = Array.from({ length: 16 }, (_, index) => {
      const [a, b] = [index % 5, Math.floor(index / 5)];
      return JSON.stringify({ id: `q${index}`, prompt: `${a}+${b}=`, answer: String(a + b) });
    });
    const dataset = join(root, 'math.jsonl');
    await writeFile(dataset, `${records.join('\n')}\n`);
    const outputDir = join(root, 'run');

    const result = await trainMath({
      checkpointDir,
      dataset,
      outputDir,
      maxSteps: 2,
      maxNewTokens: 6,
    });

    expect(result.steps).toBe(2);
    const metrics = (await readFile(join(outputDir, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number; metrics: Record<string, number> });
    expect(metrics.map((record) => record.step)).toEqual([1, 2]);
    for (const { metrics: values } of metrics) {
      expect(values['dynamic_sampling/generated_groups']).toBeGreaterThanOrEqual(8);
      expect(values['completions/max_length']).toBeLessThanOrEqual(6);
    }
    // Seeded: step 1 finds no group with reward variance, step 2 does and updates the policy.
    expect(metrics.at(-1)!.metrics.optimizer_step).toBeGreaterThanOrEqual(1);
    expect(await readdir(join(outputDir, 'checkpoints'))).toContain('step-00000002');
  }, 180_000);

  it("should be exactly the README's example code block", async () => {
    const readme = await readFile(README, 'utf8');
    const section = readme.slice(readme.indexOf('## Example'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBe(await readFile(EXAMPLE, 'utf8'));
  });
});
