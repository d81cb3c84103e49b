import { createRng } from '@rlvr/core';
import { confidenceVote } from '../confidence/confidence-vote.js';
import { deepConfOnline } from '../confidence/deepconf-online.js';
import { adaptiveVote, vote } from '../sampling/sampled-vote.js';
import { type SimulatedTrace, TraceSampler } from './trace-sampler.js';

/** The answer every simulated question is right with. */
export const CORRECT_ANSWER = '42';
const WRONG = ['17', '23', '31'];

/** The simulation's assumptions, in words (printed by the bench; lengths scale with `lengthScale`). */
export const SIMULATION = {
  pCorrect:
    'uniform(0.15, 0.85) per question; the rest split over 3 wrong answers (random weights)',
  length: 'correct uniform(250, 650) tokens, wrong uniform(300, 800)',
  confidence:
    'trace mean: correct N(2.4, 0.4), wrong N(2.2, 0.4); token = mean + N(0, 0.6), >= 0.05; a 96-token dip of -0.8 in 50% of wrong and 25% of correct traces',
};

/**
 * A sampler that plays simulated question `index`'s traces in order: trace j is fixed by
 * (`seed`, `index`, j), so every method sees the same trace sequence. NOT a language model.
 * @internal
 */
export function simulatedQuestion(seed: number, index: number, lengthScale = 1): TraceSampler {
  const rng = createRng(seed).derive(`question-${index}`);
  const pCorrect = 0.15 + 0.7 * rng.next();
  const raw = WRONG.map(() => rng.next() + 0.05);
  const total = raw.reduce((a, b) => a + b, 0);
  const wrongWeights = raw.map((w) => ((1 - pCorrect) * w) / total);
  let next = 0;
  return new TraceSampler(() => {
    const trace = createRng(seed).derive(`trace-${index}`).derive(next++);
    let u = trace.next() - pCorrect;
    let answer = CORRECT_ANSWER;
    if (u >= 0) {
      answer = WRONG[WRONG.length - 1]!;
      for (let w = 0; w < WRONG.length; w++) {
        if (u < wrongWeights[w]!) {
          answer = WRONG[w]!;
          break;
        }
        u -= wrongWeights[w]!;
      }
    }
    return simulatedTrace(trace, answer, lengthScale);
  });
}

function simulatedTrace(
  rng: ReturnType<typeof createRng>,
  answer: string,
  lengthScale: number,
): SimulatedTrace {
  const correct = answer === CORRECT_ANSWER;
  const length = Math.floor(
    lengthScale * (correct ? 250 + 400 * rng.next() : 300 + 500 * rng.next()),
  );
  const mean = (correct ? 2.4 : 2.2) + 0.4 * rng.nextNormal();
  const dipLength = Math.round(96 * lengthScale);
  const dip =
    rng.next() < (correct ? 0.25 : 0.5) ? Math.floor(rng.next() * (length - dipLength)) : -1;
  const confidences = Array.from({ length }, (_, t) => {
    const shift = dip >= 0 && t >= dip && t < dip + dipLength ? -0.8 : 0;
    return Math.max(0.05, mean + shift + 0.6 * rng.nextNormal());
  });
  return { answer, confidences };
}

/** One method's totals over the questions. */
export type MethodRow = {
  method: string;
  correct: number;
  tokens: number;
  traces: number;
  stoppedEarly: number;
};

/**
 * Runs majority@budget, ESC, offline DeepConf (bottom-10, η 10 and 90) and online DeepConf-low /
 * -high on `questions` simulated questions, each method on the same trace sequence. @internal
 */
export async function compareOnSimulatedQuestions(settings: {
  questions: number;
  seed: number;
  budget: number;
  warmup: number;
  windowSize: number;
  lengthScale: number;
}): Promise<MethodRow[]> {
  const { budget, windowSize, seed, lengthScale } = settings;
  const rows = new Map<string, MethodRow>();
  const record = (
    method: string,
    answer: string | null,
    tokens: number,
    traces: number,
    stopped = 0,
  ) => {
    const row = rows.get(method) ?? { method, correct: 0, tokens: 0, traces: 0, stoppedEarly: 0 };
    row.correct += answer === CORRECT_ANSWER ? 1 : 0;
    row.tokens += tokens;
    row.traces += traces;
    row.stoppedEarly += stopped;
    rows.set(method, row);
  };
  const sampling = { maxNewTokens: Math.ceil(1200 * lengthScale), temperature: 1, seed: 0 };
  for (let index = 0; index < settings.questions; index++) {
    const sampler = () => simulatedQuestion(seed, index, lengthScale);
    const prompt = `question ${index}`;
    const majority = await vote({ sampler: sampler(), prompt, n: budget, sampling });
    record(`majority@${budget}`, majority.answer, majority.tokensUsed, majority.samplesUsed);
    const esc = await adaptiveVote({
      sampler: sampler(),
      prompt,
      maxSamples: budget,
      strategy: { type: 'esc', windowSize: 8 },
      sampling,
    });
    record('ESC (window 8)', esc.answer, esc.tokensUsed, esc.samplesUsed);
    const [traces] = await sampler().sample({
      prompts: [prompt],
      n: budget,
      topLogprobs: 2,
      ...sampling,
    });
    const tokens = traces!.reduce((sum, completion) => sum + completion.tokenIds.length, 0);
    for (const keepTop of [10, 90]) {
      const offline = confidenceVote(traces!, { keepTop, measure: 'bottom-10', windowSize });
      record(`offline DeepConf bottom-10, eta ${keepTop}`, offline.answer, tokens, budget);
    }
    for (const keepTop of [10, 90]) {
      const online = await deepConfOnline({
        sampler: sampler(),
        prompt,
        sampling,
        maxSamples: budget,
        warmup: settings.warmup,
        keepTop,
        windowSize,
        topLogprobs: 2,
        batchSize: 4,
        consensus: 0.95,
      });
      const name = `online DeepConf-${keepTop === 10 ? 'low' : 'high'} (eta ${keepTop}, tau 0.95)`;
      record(name, online.answer, online.tokensUsed, online.samplesUsed, online.earlyStopped);
    }
  }
  return [...rows.values()];
}
