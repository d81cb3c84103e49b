export {
  GEMMA_3_1B,
  LLAMA_3_2_1B,
  QWEN3_0_6B,
  SMOLLM3_3B,
  TINY_FAMILY_CONFIGS,
} from './families.js';
