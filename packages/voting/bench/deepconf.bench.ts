/**
 * DeepConf vs plain majority voting vs ESC, accuracy and tokens:
 * `npx tsx bench/deepconf.bench.ts [questions] [seed]` from packages/voting.
 *
 * THE TRACES ARE SIMULATED (no language model writes them): per question a seeded generator draws
 * reasoning traces with an answer (correct with a per-question probability), a length and
 * per-token confidences; correct traces are on average more confident and shorter than wrong ones,
 * as DeepConf reports for real models. Every method sees the SAME sequence of traces per question
 * (trace j of question q is fixed), so the rows differ only by their policy. Accuracy numbers
 * depend entirely on the simulation's assumptions (printed below); the mechanics (threshold,
 * stops, consensus, token accounting) are those of the real code, and the second part runs them
 * on a real ONNX sampler (a tiny random model: tokens and mechanics only, its answers mean nothing).
 */
import { createRng } from '@rlvr/core';
import { buildCharTokenizer, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { adaptiveVote, confidenceVote, deepConfOnline, vote } from '../src/index.js';
import { type SimulatedTrace, TraceSampler } from '../src/testing/trace-sampler.js';

const QUESTIONS = Number(process.argv[2] ?? 100);
const SEED = Number(process.argv[3] ?? 1);
const BUDGET = 64;
const WARMUP = 16;
const WINDOW = 64;
const MAX_NEW_TOKENS = 1200;
const CORRECT = '42';
const WRONG = ['17', '23', '31'];

/** The simulation's assumptions (printed with the results). */
const MODEL = {
  pCorrect:
    'uniform(0.15, 0.85) per question; the rest split over 3 wrong answers (random weights)',
  length: 'correct uniform(250, 650) tokens, wrong uniform(300, 800)',
  confidence:
    'trace mean: correct N(2.4, 0.4), wrong N(2.2, 0.4); token = mean + N(0, 0.6), >= 0.05; a 96-token dip of -0.8 in 50% of wrong and 25% of correct traces',
};

type Question = { pCorrect: number; wrongWeights: number[] };

function question(index: number): Question {
  const rng = createRng(SEED).derive(`question-${index}`);
  const pCorrect = 0.15 + 0.7 * rng.next();
  const raw = WRONG.map(() => rng.next() + 0.05);
  const total = raw.reduce((a, b) => a + b, 0);
  return { pCorrect, wrongWeights: raw.map((w) => ((1 - pCorrect) * w) / total) };
}

/** Trace `j` of question `index`: the same for every method. */
function trace(q: Question, index: number, j: number): SimulatedTrace {
  const rng = createRng(SEED).derive(`trace-${index}`).derive(j);
  let u = rng.next();
  let answer = CORRECT;
  if (u >= q.pCorrect) {
    u -= q.pCorrect;
    answer = WRONG[WRONG.length - 1]!;
    for (let w = 0; w < WRONG.length; w++) {
      if (u < q.wrongWeights[w]!) {
        answer = WRONG[w]!;
        break;
      }
      u -= q.wrongWeights[w]!;
    }
  }
  const correct = answer === CORRECT;
  const length = Math.floor(correct ? 250 + 400 * rng.next() : 300 + 500 * rng.next());
  const mean = (correct ? 2.4 : 2.2) + 0.4 * rng.nextNormal();
  const dip = rng.next() < (correct ? 0.25 : 0.5) ? Math.floor(rng.next() * (length - 96)) : -1;
  const confidences = Array.from({ length }, (_, t) => {
    const shift = dip >= 0 && t >= dip && t < dip + 96 ? -0.8 : 0;
    return Math.max(0.05, mean + shift + 0.6 * rng.nextNormal());
  });
  return { answer, confidences };
}

/** A sampler that plays question `index`'s traces in order (a fresh one per method). */
function samplerFor(index: number): TraceSampler {
  const q = question(index);
  let next = 0;
  return new TraceSampler(() => trace(q, index, next++));
}

type Row = { correct: number; tokens: number; samples: number; stopped: number };
const rows = new Map<string, Row>();
function record(name: string, answer: string | null, tokens: number, samples: number, stopped = 0) {
  const row = rows.get(name) ?? { correct: 0, tokens: 0, samples: 0, stopped: 0 };
  row.correct += answer === CORRECT ? 1 : 0;
  row.tokens += tokens;
  row.samples += samples;
  row.stopped += stopped;
  rows.set(name, row);
}

const sampling = { maxNewTokens: MAX_NEW_TOKENS, temperature: 1, seed: 0 };
const started = performance.now();
for (let index = 0; index < QUESTIONS; index++) {
  const prompt = `question ${index}`;
  const majority = await vote({ sampler: samplerFor(index), prompt, n: BUDGET, sampling });
  record(`majority@${BUDGET}`, majority.answer, majority.tokensUsed, majority.samplesUsed);
  const esc = await adaptiveVote({
    sampler: samplerFor(index),
    prompt,
    maxSamples: BUDGET,
    strategy: { type: 'esc', windowSize: 8 },
    sampling,
  });
  record('ESC (window 8)', esc.answer, esc.tokensUsed, esc.samplesUsed);
  const [traces] = await samplerFor(index).sample({
    prompts: [prompt],
    n: BUDGET,
    topLogprobs: 2,
    ...sampling,
  });
  const tokens = traces!.reduce((sum, c) => sum + c.tokenIds.length, 0);
  for (const keepTop of [10, 90]) {
    const offline = confidenceVote(traces!, { keepTop, measure: 'bottom-10', windowSize: WINDOW });
    record(`offline DeepConf bottom-10, eta ${keepTop}`, offline.answer, tokens, BUDGET);
  }
  for (const keepTop of [10, 90]) {
    const online = await deepConfOnline({
      sampler: samplerFor(index),
      prompt,
      sampling,
      maxSamples: BUDGET,
      warmup: WARMUP,
      keepTop,
      windowSize: WINDOW,
      topLogprobs: 2,
      batchSize: 4,
      consensus: 0.95,
    });
    record(
      `online DeepConf-${keepTop === 10 ? 'low' : 'high'} (eta ${keepTop}, tau 0.95)`,
      online.answer,
      online.tokensUsed,
      online.samplesUsed,
      online.earlyStopped,
    );
  }
}
const seconds = (performance.now() - started) / 1000;

console.log('SIMULATED TRACES (no language model): see the header of bench/deepconf.bench.ts');
for (const [key, value] of Object.entries(MODEL)) console.log(`  ${key}: ${value}`);
console.log(
  `${QUESTIONS} questions, seed ${SEED}, budget ${BUDGET} traces, warm-up ${WARMUP}, window ${WINDOW}, ${seconds.toFixed(1)} s\n`,
);
const base = rows.get(`majority@${BUDGET}`)!;
console.log(
  '| method | accuracy | tokens (total) | tokens vs majority | traces / question | stopped early |',
);
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [name, row] of rows) {
  console.log(
    `| ${name} | ${((100 * row.correct) / QUESTIONS).toFixed(1)}% | ${row.tokens} | ${((100 * row.tokens) / base.tokens).toFixed(1)}% | ${(row.samples / QUESTIONS).toFixed(1)} | ${row.stopped} |`,
  );
}

// Part 2: the same driver on a real ONNX sampler (tiny random model: mechanics and tokens only).
const tokenizer = buildCharTokenizer({ characters: 'abcdefgh \n' });
const config = parseLlamaConfig({
  model_type: 'llama',
  hidden_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 48,
  vocab_size: 14,
  max_position_embeddings: 128,
});
const real = await createOnnxSampler({
  checkpoint: { ...createRandomCheckpoint(config, { seed: 3, std: 0.3 }), tokenizer },
  workers: 0,
});
const extract = (text: string) => /[a-h]/.exec(text)?.[0] ?? null;
const equals = (a: string, b: string) => a === b;
const realSampling = { maxNewTokens: 48, temperature: 1, seed: 1 };
const realMajority = await vote({
  sampler: real,
  prompt: 'abc',
  n: 32,
  sampling: realSampling,
  extract,
  equals,
});
const realOnline = await deepConfOnline({
  sampler: real,
  prompt: 'abc',
  sampling: realSampling,
  maxSamples: 32,
  warmup: 8,
  keepTop: 10,
  windowSize: 8,
  topLogprobs: 5,
  batchSize: 4,
  consensus: 0.95,
  extract,
  equals,
});
await real.close();
console.log(
  `\nreal ONNX sampler (${real.engine} engine, tiny random model; answers mean nothing): majority@32 ${realMajority.tokensUsed} tokens -> '${realMajority.answer}'; DeepConf-low ${realOnline.samplesUsed} traces (${realOnline.earlyStopped} stopped early), ${realOnline.tokensUsed} tokens, threshold ${realOnline.stopThreshold.toFixed(3)}, stopped: ${realOnline.stoppedBecause} -> '${realOnline.answer}'`,
);
