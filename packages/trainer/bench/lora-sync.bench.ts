// What a LoRA run's weight sync costs, against what an adapter-aware rollout graph would cost
// instead (issue 28: "merged weights or an adapter-aware graph: measure both"). Merging is one
// GEMM `W + s·B·A` per targeted projection per sync (`toWeightSnapshot`, measured here); an
// adapter-aware sampler would instead run `x·Aᵀ` and `(x·Aᵀ)·Bᵀ` for every projection of every
// token it samples. The bench prints the measured merge time, both costs in multiply-adds, and the
// number of sampled tokens per sync above which merging does less work.
// `pnpm --filter @rlvr/trainer exec tsx bench/lora-sync.bench.ts [shape] [r]`
import { createRandomCheckpoint, parseModelConfig } from '@rlvr/model';
import { createLlamaModel, createPolicyTrainer, selectBackend } from '../src/index.js';
import { SHAPES } from './shapes.js';

const name = process.argv[2] ?? 'Qwen2.5-0.5B';
const r = Number(process.argv[3] ?? 16);
const shape = SHAPES[name];
if (!shape) throw new Error(`unknown shape ${name}: one of ${Object.keys(SHAPES).join(', ')}`);
await selectBackend();
const config = parseModelConfig({ ...shape.config, max_position_embeddings: 512 });
const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1 }), {
  engine: 'native',
  checkFinite: false,
});
await createPolicyTrainer(model, {
  schedule: { learningRate: 1e-4 },
  lora: { r, alpha: 2 * r, targetModules: 'all-linear' },
});
const times: number[] = [];
for (let i = 0; i < 4; i++) {
  const started = performance.now();
  model.toWeightSnapshot(i);
  if (i > 0) times.push(performance.now() - started);
}
times.sort((a, b) => a - b);
const mergeMs = times[times.length >> 1]!;
const d = config.hidden_size;
const q = config.num_attention_heads * (config.head_dim ?? d / config.num_attention_heads);
const kv = config.num_key_value_heads * (config.head_dim ?? d / config.num_attention_heads);
const f = config.intermediate_size;
// [out, in] of q, k, v, o, gate, up, down
const projections: [number, number][] = [
  [q, d],
  [kv, d],
  [kv, d],
  [d, q],
  [f, d],
  [f, d],
  [d, f],
];
const layers = config.num_hidden_layers;
const mergeMacs = layers * projections.reduce((sum, [out, input]) => sum + out * input * r, 0);
const adapterMacsPerToken =
  layers * projections.reduce((sum, [out, input]) => sum + r * (out + input), 0);
const baseMacsPerToken =
  layers * projections.reduce((sum, [out, input]) => sum + out * input, 0) + config.vocab_size * d;
console.log(
  [
    `${name}, LoRA r ${r} on every linear layer`,
    `merge (toWeightSnapshot, median of 3): ${mergeMs.toFixed(0)} ms, ${(mergeMacs / 1e9).toFixed(2)} G multiply-adds`,
    `adapter-aware sampling: +${(adapterMacsPerToken / 1e6).toFixed(2)} M multiply-adds per token (+${((100 * adapterMacsPerToken) / baseMacsPerToken).toFixed(1)}% of the base model's ${(baseMacsPerToken / 1e6).toFixed(0)} M)`,
    `merging does less work from ${Math.ceil(mergeMacs / adapterMacsPerToken)} sampled tokens per sync on (a GRPO step of 8 × 256 samples 2,048)`,
  ].join('\n'),
);
