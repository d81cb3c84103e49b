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
import { buildCharTokenizer, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { deepConfOnline, vote } from '../src/index.js';
import { compareOnSimulatedQuestions, SIMULATION } from '../src/testing/simulated-questions.js';

const QUESTIONS = Number(process.argv[2] ?? 100);
const SEED = Number(process.argv[3] ?? 1);
const settings = { budget: 64, warmup: 16, windowSize: 64, lengthScale: 1 };

const started = performance.now();
const rows = await compareOnSimulatedQuestions({ questions: QUESTIONS, seed: SEED, ...settings });
const seconds = (performance.now() - started) / 1000;
console.log('SIMULATED TRACES (no language model): see the header of bench/deepconf.bench.ts');
for (const [key, value] of Object.entries(SIMULATION)) console.log(`  ${key}: ${value}`);
console.log(
  `${QUESTIONS} questions, seed ${SEED}, budget ${settings.budget} traces, warm-up ${settings.warmup}, window ${settings.windowSize}, ${seconds.toFixed(1)} s\n`,
);
const base = rows[0]!;
console.log(
  '| method | accuracy | tokens (total) | tokens vs majority | traces / question | stopped early |',
);
console.log('| --- | --- | --- | --- | --- | --- |');
for (const row of rows) {
  console.log(
    `| ${row.method} | ${((100 * row.correct) / QUESTIONS).toFixed(1)}% | ${row.tokens} | ${((100 * row.tokens) / base.tokens).toFixed(1)}% | ${(row.traces / QUESTIONS).toFixed(1)} | ${row.stoppedEarly} |`,
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
