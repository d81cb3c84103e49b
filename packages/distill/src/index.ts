export type {
  FilterTracesOptions,
  FilterTracesResult,
  PromptFilterStats,
} from './filter/filter-traces.js';
export {
  FILTER_TRACES_DEFAULTS,
  FILTER_TRACES_OPTION_KEYS,
  FILTER_TRACES_OPTIONS,
  filterTraces,
} from './filter/filter-traces.js';
export type { DistillDivergence, TopKLogprobs } from './losses/divergences.js';
export {
  distillationLoss,
  generalizedJsd,
  klDivergence,
  topKBuckets,
} from './losses/divergences.js';
export type { LossAndGradient } from './losses/gradients.js';
export { distillationLossAndGradient } from './losses/gradients.js';
export { DISTILL_LOSS_DEFAULTS } from './losses/loss-defaults.js';
export type { GenerateTracesResult } from './traces/generate-traces.js';
export { generateTraces } from './traces/generate-traces.js';
export type {
  GenerateTracesOptions,
  TraceSamplingOptions,
  TraceTeacher,
} from './traces/generate-traces-options.js';
export {
  GENERATE_TRACES_DEFAULTS,
  GENERATE_TRACES_OPTION_KEYS,
  GENERATE_TRACES_OPTIONS,
} from './traces/generate-traces-options.js';
export type { TokenizeTracesOptions } from './traces/tokenize-traces.js';
export { TOKENIZE_TRACES_OPTIONS, tokenizeTraces } from './traces/tokenize-traces.js';
export type { ReadTracesOptions, TraceSettings, TracesHeader } from './traces/trace-file.js';
export { READ_TRACES_OPTIONS, readTraces, readTracesHeader } from './traces/trace-file.js';
export type { PromptRecord, TraceRecord } from './traces/trace-record.js';
export type { DistillCheckpoint } from './train/distill-checkpoint.js';
export { loadDistillCheckpoint, saveDistillCheckpoint } from './train/distill-checkpoint.js';
export type {
  DistillEvaluate,
  DistillLoss,
  DistillPosition,
  DistillStepRecord,
  DistillStudentOptions,
  DistillStudentResult,
} from './train/distill-options.js';
export {
  DISTILL_LOSS_SCHEMA,
  DISTILL_STUDENT_DEFAULTS,
  DISTILL_STUDENT_OPTION_KEYS,
  DISTILL_STUDENT_OPTIONS,
} from './train/distill-options.js';
export { distillStudent } from './train/distill-student.js';
export { assertSharedTokenizer } from './train/shared-tokenizer.js';
export type { AnnotateTopKOptions, TeacherLogits } from './train/teacher.js';
export { ANNOTATE_TOP_K_OPTIONS, annotateTopK, teacherFromModel } from './train/teacher.js';
export { VERSION } from './version.js';
