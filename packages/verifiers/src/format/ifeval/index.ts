export type { IfevalCheckOptions, IfevalInstructionResult, IfevalResult } from './evaluate.js';
export { checkIfeval, checkIfevalAsync, looseVariants } from './evaluate.js';
export type { IfevalSemantics } from './kwargs.js';
export type { LanguageDetector } from './language.js';
export {
  DETECTABLE_LANGUAGES,
  IFEVAL_LANGUAGES,
  loadLanguageDetector,
} from './language.js';
export type { IfevalInstruction, IfevalInstructionId } from './registry.js';
export { IFEVAL_INSTRUCTION_IDS } from './registry.js';
export type {
  IfevalFilesOptions,
  IfevalReport,
  IfevalResponse,
  IfevalRow,
  IfevalTally,
} from './report.js';
export {
  evaluateIfeval,
  parseIfevalInput,
  parseIfevalResponses,
  scoreIfevalFiles,
} from './report.js';
export type { IfevalRewardOptions } from './reward.js';
export { ifevalReward } from './reward.js';
