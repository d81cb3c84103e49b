import { staleReadmeTables } from '@rlvr/options/readme';
import { describe, expect, it } from 'vitest';
import { FILTER_TRACES_OPTIONS } from './filter/filter-traces.js';
import { GENERATE_TRACES_OPTIONS } from './traces/generate-traces-options.js';
import { TOKENIZE_TRACES_OPTIONS } from './traces/tokenize-traces.js';
import { READ_TRACES_OPTIONS } from './traces/trace-file.js';
import { DISTILL_STUDENT_OPTIONS } from './train/distill-options.js';
import { ANNOTATE_TOP_K_OPTIONS } from './train/teacher.js';

const README = new URL('../README.md', import.meta.url);

describe('README options tables', () => {
  it('should be the tables generated from the options schemas', () => {
    const tables = {
      generateTraces: GENERATE_TRACES_OPTIONS.schema,
      filterTraces: FILTER_TRACES_OPTIONS.schema,
      distillStudent: DISTILL_STUDENT_OPTIONS.schema,
      readTraces: READ_TRACES_OPTIONS.schema,
      tokenizeTraces: TOKENIZE_TRACES_OPTIONS.schema,
      annotateTopK: ANNOTATE_TOP_K_OPTIONS.schema,
    };
    expect(
      staleReadmeTables(README, tables),
      'run UPDATE_OPTIONS_TABLES=1 npx vitest run src/readme-options.test.ts',
    ).toEqual([]);
  });
});
