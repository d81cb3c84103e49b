import { staleReadmeTables } from '@rlvr/options/readme';
import { describe, expect, it } from 'vitest';
import { LOGITS_OPTIONS } from './generation/logits-processors.js';
import { SEQUENCE_TRACKER_OPTIONS } from './generation/stopping-criteria.js';
import { ONNX_SAMPLER_OPTIONS } from './onnx/sampler-options.js';

describe('README options tables', () => {
  it('should be the tables generated from the options schemas', () => {
    const tables = {
      createOnnxSampler: ONNX_SAMPLER_OPTIONS.schema,
      processLogits: LOGITS_OPTIONS.schema,
      SequenceTracker: SEQUENCE_TRACKER_OPTIONS.schema,
    };
    const readme = new URL('../README.md', import.meta.url);
    expect(
      staleReadmeTables(readme, tables),
      'run UPDATE_OPTIONS_TABLES=1 npx vitest run src/readme-options.test.ts',
    ).toEqual([]);
  });
});
