import { staleReadmeTables } from '@rlvr/options/readme';
import { describe, expect, it } from 'vitest';
import { SELECT_BACKEND_OPTIONS } from './backend/select-backend-options.js';
import { GRPO_CONFIG } from './grpo/grpo-config.js';
import { GRPO_TRAINER_OPTIONS } from './grpo/grpo-trainer-options.js';
import { CREATE_LLAMA_MODEL_OPTIONS } from './model/llama-model-options.js';
import {
  COMPLETION_LOGPROBS_OPTIONS,
  GRPO_STEP_OPTIONS,
  LAYOUT_OPTIONS,
} from './train/step-options.js';
import { POLICY_TRAINER_OPTIONS } from './train/trainer-options.js';

const README = new URL('../README.md', import.meta.url);

describe('README options tables', () => {
  it('should be the tables generated from the options schemas', () => {
    const tables = {
      createGrpoTrainer: GRPO_TRAINER_OPTIONS.schema,
      GrpoConfig: GRPO_CONFIG.schema,
      createPolicyTrainer: POLICY_TRAINER_OPTIONS.schema,
      grpoStep: GRPO_STEP_OPTIONS,
      sftStep: LAYOUT_OPTIONS,
      completionLogprobs: COMPLETION_LOGPROBS_OPTIONS,
      createLlamaModel: CREATE_LLAMA_MODEL_OPTIONS.schema,
      selectBackend: SELECT_BACKEND_OPTIONS.schema,
    };
    expect(
      staleReadmeTables(README, tables),
      'run UPDATE_OPTIONS_TABLES=1 npx vitest run src/readme-options.test.ts',
    ).toEqual([]);
  });
});
