export * from './ifeval/index.js';
export type {
  ConstraintResult,
  CountBounds,
  InstructionConstraint,
  InstructionResult,
} from './instructions.js';
export { checkInstructions, countSentences, countWords } from './instructions.js';
export type { R1FormatOptions, R1FormatResult } from './r1-format.js';
export { checkR1Format } from './r1-format.js';
export {
  createInstructionVerifier,
  createR1FormatVerifier,
  instructionReward,
  r1FormatReward,
} from './reward.js';
