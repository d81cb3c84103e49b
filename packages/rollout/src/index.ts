export type { TokenEvent } from './engine/generate-batch.js';
export {
  DistributionBuilder,
  LOGITS_OPTIONS,
  type LogitsProcessorOptions,
  processLogits,
  type ResolvedLogitsOptions,
  resolveLogitsOptions,
  type TokenDistribution,
} from './generation/logits-processors.js';
export { rawLogprob, type SampledToken, sequenceRng, TokenSampler } from './generation/samplers.js';
export {
  findStopString,
  SEQUENCE_TRACKER_OPTIONS,
  SequenceTracker,
  type SequenceTrackerOptions,
  type StopMatch,
} from './generation/stopping-criteria.js';
export { HERMES_CHAT_TEMPLATE } from './multi-turn/hermes-template.js';
export {
  type ParsedToolCalls,
  parseToolCalls,
  TOOL_CALL_CLOSE,
  TOOL_CALL_OPEN,
} from './multi-turn/tool-call-format.js';
export {
  createOnnxSampler,
  type OnnxSampler,
  type OnnxSamplerOptions,
  type SampleStreamEvent,
  type WeightSyncTiming,
} from './onnx/onnx-sampler.js';
export { EXECUTION_PROVIDERS, type ExecutionProvider } from './onnx/ort.js';
export type { WeightSync } from './onnx/sampler-options.js';
export {
  ONNX_SAMPLER_DEFAULTS,
  ONNX_SAMPLER_OPTION_KEYS,
  ONNX_SAMPLER_OPTIONS,
} from './onnx/sampler-options.js';
export type { TokenizerFiles } from './tokenizer/rollout-tokenizer.js';
export { VERSION } from './version.js';
