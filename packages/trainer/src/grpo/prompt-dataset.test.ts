import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import { loadPromptDataset, validatePromptRecords } from './prompt-dataset.js';

describe('loadPromptDataset', () => {
  it('should read JSONL records, keep extra fields and name bad lines', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-data-'));
    try {
      const good = join(dir, 'good.jsonl');
      await writeFile(
        good,
        '{"id":1,"prompt":"2+2=","answer":"4","level":3}\n\n{"prompt":"3+3=","answer":"6"}\n',
      );
      expect(await loadPromptDataset(good)).toEqual([
        { id: '1', prompt: '2+2=', answer: '4', level: 3 },
        { id: '3', prompt: '3+3=', answer: '6' },
      ]);
      const bad = join(dir, 'bad.jsonl');
      await writeFile(bad, '{"id":"a","prompt":"x"}\n{"id":"b",\n');
      await expect(loadPromptDataset(bad)).rejects.toThrow(/bad\.jsonl:2/);
      const duplicate = join(dir, 'duplicate.jsonl');
      await writeFile(duplicate, '{"id":"a","prompt":"x"}\n{"id":"a","prompt":"y"}\n');
      await expect(loadPromptDataset(duplicate)).rejects.toThrow(/\[1\]\.id/);
      await expect(loadPromptDataset(join(dir, 'missing.jsonl'))).rejects.toThrow(/Cannot read/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('should validate in-memory records', () => {
    expect(() => validatePromptRecords([], 'f')).toThrow(InvalidArgumentError);
    expect(() => validatePromptRecords([{ id: 'a', prompt: '' }], 'f')).toThrow(
      /dataset\[0\]\.prompt/,
    );
  });
});
