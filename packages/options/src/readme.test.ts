import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineOptions } from './define.js';
import { integer, withDefault } from './fields.js';
import { staleReadmeTables } from './readme.js';

describe('staleReadmeTables', () => {
  it('names a stale table, and rewrites it only when asked', () => {
    const OPTIONS = defineOptions(
      { k: withDefault(integer({ min: 1 }), 4, 'Traces per prompt.') },
      { parameter: 'options', functionName: 'example' },
    );
    const path = join(mkdtempSync(join(tmpdir(), 'options-readme-')), 'README.md');
    writeFileSync(path, '# x\n<!-- options-table:example -->\n<!-- /options-table:example -->\n');
    expect(staleReadmeTables(path, { example: OPTIONS.schema }, { update: false })).toEqual([
      'example',
    ]);
    expect(readFileSync(path, 'utf8')).not.toContain('Traces per prompt.');
    expect(staleReadmeTables(path, { example: OPTIONS.schema }, { update: true })).toEqual([]);
    expect(readFileSync(path, 'utf8')).toContain(
      '| `k` | an integer >= 1 | `4` | Traces per prompt. |',
    );
    expect(staleReadmeTables(path, { example: OPTIONS.schema }, { update: false })).toEqual([]);
  });
});
