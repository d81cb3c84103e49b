/**
 * Training throughput (forward + backward + AdamW) of @rlvr/trainer at batch 16 × 128 for the 0.8M
 * and 5M configs on every tfjs backend that loads here, with achieved GFLOP/s, and the same
 * architecture in PyTorch (CPU) side by side when `/usr/bin/python3 -c "import torch"` works.
 *
 * Run: `pnpm --filter @rlvr/trainer bench` (or `npx tsx bench/trainer.bench.ts` in this folder).
 * Env: BENCH_STEPS (default 5), BENCH_BACKENDS (default "wasm,cpu"), TORCH_THREADS (default 1).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRng } from '@rlvr/core';
import { createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import {
  type BackendName,
  createLlamaModel,
  createPolicyTrainer,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';

const BATCH = 16;
const SEQ = 128;
const STEPS = Number(process.env.BENCH_STEPS ?? 5);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'wasm,cpu').split(',') as BackendName[];
const TORCH_THREADS = Number(process.env.TORCH_THREADS ?? 1);

const CONFIGS = {
  '0.8M': {
    hidden_size: 128,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    intermediate_size: 352,
  },
  '5M': { hidden_size: 256, num_hidden_layers: 6, num_attention_heads: 8, intermediate_size: 688 },
} as const;

/** Training FLOPs per token: 6 × (non-embedding + head) params + attention (fwd 4·T·d per layer, ×3). */
function flopsPerToken(spec: (typeof CONFIGS)[keyof typeof CONFIGS], vocab: number) {
  const d = spec.hidden_size;
  const matrixParams =
    spec.num_hidden_layers * (4 * d * d + 3 * d * spec.intermediate_size) + d * vocab;
  return 6 * matrixParams + 3 * spec.num_hidden_layers * 4 * SEQ * d;
}

function batch(seed: number, vocab: number): TokenSequence[] {
  const rng = createRng(seed);
  return Array.from({ length: BATCH }, () => ({
    promptIds: [Math.floor(rng.next() * vocab)],
    completionIds: Array.from({ length: SEQ }, () => Math.floor(rng.next() * vocab)),
  }));
}

function torchAvailable(): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const rows: string[] = [];
const torch = torchAvailable();
for (const [name, spec] of Object.entries(CONFIGS)) {
  const vocab = 64;
  const config = parseLlamaConfig({ ...spec, vocab_size: vocab, max_position_embeddings: 256 });
  const flops = flopsPerToken(spec, vocab);
  for (const backend of BACKENDS) {
    if (backend === 'cpu' && name !== '0.8M') continue; // pure JS: ~1 GFLOP/s, one config is enough
    await selectBackend({ candidates: [backend] });
    const model = await createLlamaModel(createRandomCheckpoint(config, { seed: 1 }));
    const trainer = await createPolicyTrainer(model, { schedule: { learningRate: 1e-4 } });
    const sequences = batch(2, vocab);
    trainer.sftStep(sequences); // warm-up
    const steps = backend === 'cpu' ? 1 : STEPS;
    const start = performance.now();
    for (let step = 0; step < steps; step++) trainer.sftStep(sequences);
    const seconds = (performance.now() - start) / 1000;
    const tokensPerSecond = (BATCH * SEQ * steps) / seconds;
    rows.push(
      `${name.padEnd(5)} ${`tfjs-${backend}`.padEnd(14)} params ${(model.parameterCount / 1e6).toFixed(2)}M  ${tokensPerSecond.toFixed(0).padStart(6)} train tok/s  ${((tokensPerSecond * flops) / 1e9).toFixed(1).padStart(5)} GFLOP/s`,
    );
    console.log(rows.at(-1));
    trainer.dispose();
    model.dispose();
  }
  if (torch) {
    const script = fileURLToPath(new URL('./torch-llama.py', import.meta.url));
    const openblas = '/usr/lib/x86_64-linux-gnu/openblas-openmp';
    const env = existsSync(openblas)
      ? { ...process.env, LD_LIBRARY_PATH: openblas, OMP_NUM_THREADS: String(TORCH_THREADS) }
      : { ...process.env, OMP_NUM_THREADS: String(TORCH_THREADS) };
    const args = [
      spec.hidden_size,
      spec.num_hidden_layers,
      spec.num_attention_heads,
      spec.intermediate_size,
      vocab,
      BATCH,
      SEQ,
      STEPS,
      TORCH_THREADS,
    ];
    const out = execFileSync('/usr/bin/python3', [script, ...args.map(String)], {
      env,
      encoding: 'utf8',
    });
    const { tokensPerSecond } = JSON.parse(out.trim().split('\n').at(-1)!) as {
      tokensPerSecond: number;
    };
    rows.push(
      `${name.padEnd(5)} ${'pytorch-cpu'.padEnd(14)} ${existsSync(openblas) ? 'OpenBLAS' : 'default BLAS'}, ${TORCH_THREADS} thread(s)  ${tokensPerSecond.toFixed(0).padStart(6)} train tok/s  ${((tokensPerSecond * flops) / 1e9).toFixed(1).padStart(5)} GFLOP/s`,
    );
    console.log(rows.at(-1));
  }
}
if (!torch) {
  console.log(
    'PyTorch side-by-side skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch libopenblas0-openmp).',
  );
}
