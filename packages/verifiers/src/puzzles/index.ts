export type {
  CountdownGeneratorOptions,
  CountdownResult,
  CountdownTask,
  CountdownVerifyOptions,
} from './countdown.js';
export { generateCountdown, verifyCountdown } from './countdown.js';
export type { Claim, KnightsKnavesResult, KnightsKnavesTask, Role } from './knights-knaves.js';
export {
  generateKnightsKnaves,
  solveKnightsKnaves,
  verifyKnightsKnaves,
} from './knights-knaves.js';
export {
  countdownReward,
  createCountdownVerifier,
  createKnightsKnavesVerifier,
  knightsKnavesReward,
} from './reward.js';
