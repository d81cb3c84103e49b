/**
 * Benchmarks of @rlvr/model: ONNX export time, safetensors write/load throughput (F32 and BF16),
 * checkpoint save/load, and the onnxruntime session creation that follows an export.
 * Run: `pnpm --filter @rlvr/model bench` (or `npx tsx bench/model.bench.ts` in this folder).
 * Pass `--quick` to skip the 58M model.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import {
  countParameters,
  createRandomCheckpoint,
  exportOnnx,
  loadCheckpoint,
  parseLlamaConfig,
  readSafetensors,
  saveCheckpoint,
  writeSafetensors,
} from '../src/index.js';

const models = [
  { name: '0.8M', vocab: 64, hidden: 128, layers: 4, heads: 4, kvHeads: 2, inter: 384 },
  { name: '5M', vocab: 512, hidden: 256, layers: 6, heads: 4, kvHeads: 2, inter: 768 },
  { name: '58M', vocab: 32000, hidden: 512, layers: 8, heads: 8, kvHeads: 2, inter: 1536 },
].filter((model) => !(process.argv.includes('--quick') && model.name === '58M'));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function time<T>(runs: number, action: () => Promise<T> | T): Promise<number> {
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    await action();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** Median CPU time (user + system) of the process over `runs` calls, in ms. */
async function cpuTime<T>(runs: number, action: () => Promise<T> | T): Promise<number> {
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = process.cpuUsage();
    await action();
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000);
  }
  return median(samples);
}

const dir = await mkdtemp(join(tmpdir(), 'rlvr-model-bench-'));
const rows: Record<string, string | number>[] = [];
try {
  for (const spec of models) {
    const config = parseLlamaConfig({
      vocab_size: spec.vocab,
      hidden_size: spec.hidden,
      num_hidden_layers: spec.layers,
      num_attention_heads: spec.heads,
      num_key_value_heads: spec.kvHeads,
      intermediate_size: spec.inter,
    });
    const checkpoint = createRandomCheckpoint(config, { seed: 1 });
    const params = countParameters(config);
    const megabytes = (params * 4) / 2 ** 20;
    const runs = params > 1e7 ? 3 : 7;

    const exportMs = await time(runs, () => exportOnnx(checkpoint));
    const exportCpuMs = await cpuTime(runs, () => exportOnnx(checkpoint));
    const bytes = exportOnnx(checkpoint);
    const sessionMs = await time(runs, async () => {
      const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all' });
      await session.release();
    });

    const f32Path = join(dir, `${spec.name}-f32.safetensors`);
    const bf16Path = join(dir, `${spec.name}-bf16.safetensors`);
    const writeMs = await time(runs, () => writeSafetensors(f32Path, checkpoint.tensors));
    await writeSafetensors(bf16Path, checkpoint.tensors, { dtype: 'BF16' });
    const readF32Ms = await time(runs, () => readSafetensors(f32Path));
    const readBf16Ms = await time(runs, () => readSafetensors(bf16Path));
    const f32Bytes = (await stat(f32Path)).size;
    const bf16Bytes = (await stat(bf16Path)).size;

    const folder = join(dir, `${spec.name}-checkpoint`);
    const saveMs = await time(runs, () => saveCheckpoint(folder, checkpoint));
    const loadMs = await time(runs, () => loadCheckpoint(folder));

    rows.push({
      model: spec.name,
      params: `${(params / 1e6).toFixed(2)}M`,
      'export ms': exportMs.toFixed(1),
      'export cpu ms': exportCpuMs.toFixed(1),
      'onnx MB': (bytes.length / 2 ** 20).toFixed(1),
      'ort session ms': sessionMs.toFixed(1),
      'write F32 MB/s': (f32Bytes / 2 ** 20 / (writeMs / 1000)).toFixed(0),
      'read F32 MB/s': (f32Bytes / 2 ** 20 / (readF32Ms / 1000)).toFixed(0),
      'read BF16 MB/s': (bf16Bytes / 2 ** 20 / (readBf16Ms / 1000)).toFixed(0),
      'save ckpt ms': saveMs.toFixed(1),
      'load ckpt ms': loadMs.toFixed(1),
      'weights MB': megabytes.toFixed(1),
    });
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
console.log(
  `@rlvr/model bench (Node ${process.version}, medians, wall time unless 'cpu'; MB = 2^20 bytes; files in ${tmpdir()}; load average ${loadavg()[0]?.toFixed(1)})`,
);
console.table(rows);
