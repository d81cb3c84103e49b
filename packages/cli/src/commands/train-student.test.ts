import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cutMetricsAfter } from './train-student.js';

describe('cutMetricsAfter', () => {
  it('should drop the rows after the checkpoint step (they are trained and logged again)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlvr-cut-'));
    const path = join(dir, 'metrics.jsonl');
    const rows = Array.from({ length: 9 }, (_, i) => JSON.stringify({ step: i + 1, metrics: {} }));
    writeFileSync(path, `${rows.join('\n')}\n{"step":10,"metr`);
    await cutMetricsAfter(dir, 6);
    expect(readFileSync(path, 'utf8')).toBe(`${rows.slice(0, 6).join('\n')}\n`);
    await cutMetricsAfter(dir, 6);
    expect(readFileSync(path, 'utf8')).toBe(`${rows.slice(0, 6).join('\n')}\n`);
    await cutMetricsAfter(join(dir, 'missing'), 1);
  });
});
