import type { CalculatorDemoConfig } from './calculator-demo.js';
import type { HackingClaimConfig } from './hacking-claim.js';

const MODEL = { hiddenSize: 64, layers: 2, heads: 4, kvHeads: 2, intermediateSize: 128 };

/** The full run (the README command; within 15 minutes on 2 cores). */
export const FULL: { calculator: CalculatorDemoConfig; hacking: HackingClaimConfig } = {
  calculator: {
    model: MODEL,
    demonstrations: 1000,
    toolDemoShare: 0.7,
    sftSteps: 600,
    sftBatchSize: 16,
    sftLearningRate: 5e-3,
    grpoSteps: 30,
    promptsPerStep: 8,
    groupSize: 8,
    grpoLearningRate: 2e-4,
    temperature: 0.7,
    heldOut: 40,
    seed: 1,
  },
  hacking: {
    model: MODEL,
    demonstrations: 400,
    sftSteps: 150,
    sftBatchSize: 16,
    sftLearningRate: 5e-3,
    grpoSteps: 10,
    promptsPerStep: 4,
    groupSize: 8,
    grpoLearningRate: 5e-4,
    evaluation: 64,
    seed: 1,
  },
};

/** `--quick`: every phase runs, at a size CI can afford (~1 minute). */
export const QUICK: typeof FULL = {
  calculator: {
    ...FULL.calculator,
    demonstrations: 100,
    sftSteps: 40,
    grpoSteps: 2,
    promptsPerStep: 4,
    groupSize: 4,
    heldOut: 8,
  },
  hacking: {
    ...FULL.hacking,
    demonstrations: 100,
    sftSteps: 30,
    grpoSteps: 2,
    promptsPerStep: 2,
    groupSize: 4,
    evaluation: 8,
  },
};
