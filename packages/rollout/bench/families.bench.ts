/**
 * Rollout at the shapes of the model families RL starts from, random weights:
 * `npx tsx bench/families.bench.ts [--family qwen3|llama3|gemma3] [--samples 8] [--new 32]
 * [--repeats 2]` (from packages/rollout; one family per process keeps one model in memory).
 *
 * Shapes: Qwen3-0.6B, Llama-3.2-1B (llama3 RoPE scaling), Gemma-3-1B (sliding window 512 on 5 of
 * every 6 layers, GeGLU, four norms), each its real `config.json` (`@rlvr/model/test`; context
 * trimmed to 512). The `loop` engine in-process on 2 threads, by default with the weights as graph inputs
 * (`--weight-sync inputs`: one copy of the weights besides the checkpoint's; `auto` builds them
 * into the graph: faster decoding, two more copies while the session is made), temperature 0.8, top-p 1, EOS
 * ignored; G samples of one 32-token prompt. Rows: median tokens/s of the repeats after a warm-up,
 * one full weight update (an in-place copy of every tensor) with its time to the first token, and the peak RSS of the
 * process. The machine may be shared: the load average is printed with the row.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createRng } from '@rlvr/core';
import {
  buildCharTokenizer,
  countParameters,
  createRandomCheckpoint,
  parseModelConfig,
} from '@rlvr/model';
import { GEMMA_3_1B, LLAMA_3_2_1B, QWEN3_0_6B } from '@rlvr/model/test';
import { createOnnxSampler } from '../src/index.js';

const { values: args } = parseArgs({
  options: {
    family: { type: 'string', default: 'qwen3' },
    samples: { type: 'string', default: '8' },
    new: { type: 'string', default: '32' },
    repeats: { type: 'string', default: '2' },
    'weight-sync': { type: 'string', default: 'inputs' },
  },
});

// their config.json (@rlvr/model/test)
const SHAPES: Record<string, Record<string, unknown>> = {
  qwen3: QWEN3_0_6B,
  llama3: LLAMA_3_2_1B,
  gemma3: GEMMA_3_1B,
};

const PROMPT = 32;
const G = Number(args.samples);
const NEW = Number(args.new);
const REPEATS = Number(args.repeats);
const family = args.family as string;
const shape = SHAPES[family];
if (!shape) throw new Error(`--family: one of ${Object.keys(SHAPES).join(', ')}`);
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[values.length >> 1] as number;
const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
let peak = 0;
const watch = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 200);

const config = parseModelConfig({ ...shape, max_position_embeddings: 512 });
const started = performance.now();
// Random weights, drawn fast: createRandomCheckpoint's normal draws take minutes at 1B parameters
// on this machine, so the matrices get uniform values of the same std (0.02) from a xorshift.
const checkpoint = {
  ...createRandomCheckpoint(config, { seed: 1, std: 0 }),
  tokenizer: buildCharTokenizer({ characters: 'abcdefghijklmnopqrstuvwxyz' }),
};
let state = 0x9e3779b9;
const half = 0.02 * Math.sqrt(3);
for (const tensor of checkpoint.tensors) {
  if (tensor.shape.length < 2) continue;
  const { data } = tensor;
  for (let index = 0; index < data.length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    data[index] = ((state >>> 0) / 2 ** 32 - 0.5) * 2 * half;
  }
}
const initialized = performance.now();
const rng = createRng(7);
const prompt = Array.from({ length: PROMPT }, () => 4 + rng.nextInt(26));
const sampler = await createOnnxSampler({
  checkpoint,
  engine: 'loop',
  workers: 0,
  threads: 2,
  weightSync: args['weight-sync'] as 'inputs' | 'auto',
  eosTokenIds: [],
});
const ready = performance.now();
const request = (seed: number) => ({
  prompts: [prompt],
  n: G,
  maxNewTokens: NEW,
  temperature: 0.8,
  seed,
});
await sampler.sample({ ...request(0), n: 2, maxNewTokens: 2 });
const times: number[] = [];
for (let repeat = 0; repeat < REPEATS; repeat++) {
  const start = performance.now();
  await sampler.sample(request(repeat + 1));
  times.push((performance.now() - start) / 1000);
}
// a full update (every tensor, the same values: no second copy of the weights in memory)
const syncStart = performance.now();
await sampler.updateWeights({ step: 1, tensors: checkpoint.tensors });
const synced = performance.now();
await sampler.sample({ ...request(9), n: 1, maxNewTokens: 1 });
const first = performance.now();
await sampler.close();
clearInterval(watch);
peak = Math.max(peak, process.memoryUsage().rss);
const seconds = median(times);
console.log(
  `| ${family} shape | ${(countParameters(config) / 1e6).toFixed(0)}M | ${G} × ${NEW} after ${PROMPT} | ${((G * NEW) / seconds).toFixed(1)} tok/s (${times.map((t) => t.toFixed(1)).join(', ')} s) | random init ${((initialized - started) / 1000).toFixed(0)} s + sampler ${((ready - initialized) / 1000).toFixed(0)} s, weightSync '${args['weight-sync']}' | update ${Math.round(synced - syncStart)} ms (${sampler.lastWeightSync?.mode}), first token ${Math.round(first - synced)} ms | peak RSS ${gib(peak)} GiB | load ${loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')} |`,
);
