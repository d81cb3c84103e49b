import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The trainer's rooms, one way down (docs/architecture.md): batches and RoPE / attention tables,
// and onnxruntime-node's binding (ort/), at the bottom, the engines (the tfjs kernels in backend/,
// the native engine) above them, the model API above the engines, the training steps above the
// model, the GRPO loop on top. Each room may import only from the rooms listed for it (tests and
// test-only helpers excepted).
const ALLOWED: Record<string, readonly string[]> = {
  batch: [],
  ort: [],
  optim: [],
  errors: [],
  backend: ['batch', 'ort'],
  native: ['batch', 'ort'],
  model: ['batch', 'ort', 'backend', 'native'],
  train: ['batch', 'ort', 'backend', 'native', 'model', 'optim', 'errors'],
  grpo: ['batch', 'ort', 'backend', 'native', 'model', 'optim', 'errors', 'train'],
};

describe('the trainer source rooms', () => {
  it('import one way down', () => {
    const src = import.meta.dirname;
    const rooms = readdirSync(src, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .filter((room) => room !== 'testing');
    expect([...rooms].sort()).toEqual(Object.keys(ALLOWED).sort());
    const wrong: string[] = [];
    for (const room of rooms) {
      for (const file of readdirSync(join(src, room))) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
        const text = readFileSync(join(src, room, file), 'utf8');
        for (const match of text.matchAll(/(?:from |import\()'\.\.\/([a-z-]+)\//g)) {
          const target = match[1]!;
          if (!ALLOWED[room]!.includes(target)) wrong.push(`${room}/${file} -> ${target}/`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
