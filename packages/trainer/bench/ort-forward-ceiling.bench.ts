/**
 * A ceiling for the "one onnxruntime train-step graph" route of issue #14: the forward pass alone
 * of @rlvr/model's exported decoder graph (`exportOnnx`, plain opset-17 ops, logits for every
 * position) on the trainer bench's batch (16 × 128 tokens, the 0.8M and 5M configs) in
 * onnxruntime-node with 2 intra-op threads, median of 9 runs. A training step costs about 3×
 * the forward's FLOPs (backward 2×), so `16 × 128 / (3 × forward)` is what such a graph would do
 * if its backward ran as efficiently as this forward (AdamW not counted): compare it with
 * `bench/trainer.bench.ts`'s PyTorch column from the same machine.
 *
 * Run: `npx tsx bench/ort-forward-ceiling.bench.ts` (from packages/trainer).
 */
import { loadavg } from 'node:os';
import { createRandomCheckpoint, exportOnnx, parseLlamaConfig } from '@rlvr/model';
import * as ort from 'onnxruntime-node';
import { BENCH_CONFIGS } from './configs.js';

const BATCH = 16;
const SEQ = 128;
const CONFIGS = BENCH_CONFIGS;

for (const [name, spec] of Object.entries(CONFIGS)) {
  const config = parseLlamaConfig({ model_type: 'llama', max_position_embeddings: 512, ...spec });
  const checkpoint = createRandomCheckpoint(config, { seed: 1, std: 0.05 });
  const session = await ort.InferenceSession.create(exportOnnx(checkpoint), {
    intraOpNumThreads: 2,
    graphOptimizationLevel: 'all',
  });
  const tokens = BATCH * SEQ;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: tokens }, (_, i) => BigInt((i * 7919) % config.vocab_size)),
      [BATCH, SEQ],
    ),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(tokens).fill(1n), [BATCH, SEQ]),
    position_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: tokens }, (_, i) => BigInt(i % SEQ)),
      [BATCH, SEQ],
    ),
  };
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${layer}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [
        BATCH,
        config.num_key_value_heads,
        0,
        config.head_dim,
      ]);
    }
  }
  for (let warm = 0; warm < 3; warm++) await session.run(feeds);
  const times: number[] = [];
  for (let run = 0; run < 9; run++) {
    const start = performance.now();
    await session.run(feeds);
    times.push(performance.now() - start);
  }
  await session.release();
  const forwardMs = [...times].sort((a, b) => a - b)[4]!;
  console.log(
    `${name}: forward ${forwardMs.toFixed(1)} ms per ${BATCH}×${SEQ} batch (${Math.round((tokens / forwardMs) * 1000)} tok/s); at 3× the forward a train step would do ~${Math.round((tokens / (3 * forwardMs)) * 1000)} tok/s`,
  );
}
console.log(
  `load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(', ')}`,
);
