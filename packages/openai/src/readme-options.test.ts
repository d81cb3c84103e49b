import { staleReadmeTables } from '@rlvr/options/readme';
import { describe, expect, it } from 'vitest';
import { OPENAI_SAMPLER_OPTIONS } from './options.js';

describe('README options table', () => {
  it('should be the table generated from the options schema', () => {
    const tables = { createOpenAISampler: OPENAI_SAMPLER_OPTIONS.schema };
    const readme = new URL('../README.md', import.meta.url);
    expect(
      staleReadmeTables(readme, tables),
      'run UPDATE_OPTIONS_TABLES=1 npx vitest run src/readme-options.test.ts',
    ).toEqual([]);
  });
});
