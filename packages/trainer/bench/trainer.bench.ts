/**
 * Training throughput and peak memory of @rlvr/trainer (the native engine: what `selectBackend()`
 * picks where onnxruntime-node is installed) at the shapes of real checkpoints, side by side with
 * the same architecture, shape and tokens in PyTorch (CPU; OpenBLAS when installed), full
 * fine-tuning: `sftStep` (token-mean cross-entropy on the completion tokens) and `grpoStep` (TRL's
 * GRPO loss with a reference model, β 0.04, ε 0.2 / 0.28, token mean). Every round of each side
 * is its own process (its peak RSS is its own: VmHWM after the weights exist), ours and the peer
 * alternate (which goes first alternates too), and the table shows medians and ratios: speed is
 * the ratio of tokens per median step, CPU time the ratio of the peer's median CPU seconds per step
 * (user + system, all threads) to ours — a check on the speed ratio when the machine is shared. LoRA rows (no PyTorch peer: PEFT is not
 * installed here) show our step time and peak RSS.
 *
 * Run: `pnpm --filter @rlvr/trainer bench` (or `npx tsx bench/trainer.bench.ts` in this folder).
 * Env: BENCH_SHAPES (default `5M,SmolLM2-135M,SmolLM2-360M,Qwen2.5-0.5B`; any of bench/shapes.ts),
 * BENCH_MODES (default `sft,grpo`), BENCH_ROUNDS (default 2), BENCH_STEPS (timed steps per round,
 * default 2), BENCH_LORA (default `Qwen2.5-0.5B,Qwen2.5-1.5B`: the LoRA rows, empty for none),
 * BENCH_FAMILIES (default `Qwen3-0.6B,Llama-3.2-1B,Gemma-3-1B`: one shape per other family, ours
 * only — the PyTorch peer implements the Llama/Qwen2 rules — full fine-tuning `sftStep` where the
 * memory plan admits it, else the typed refusal, and a LoRA r 16 all-linear `grpoStep`; empty for
 * none), TORCH_THREADS (default 2: both cores).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type BenchShape, SHAPES } from './shapes.js';
import { OPENBLAS, torchAvailable } from './torch-peer.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const STEPS = Number(process.env.BENCH_STEPS ?? 2);
const TORCH_THREADS = Number(process.env.TORCH_THREADS ?? 2);
const list = (value: string | undefined, fallback: string) =>
  (value ?? fallback).split(',').filter((item) => item !== '');
const SHAPE_NAMES = list(process.env.BENCH_SHAPES, '5M,SmolLM2-135M,SmolLM2-360M,Qwen2.5-0.5B');
const MODES = list(process.env.BENCH_MODES, 'sft,grpo') as ('sft' | 'grpo')[];
const LORA_SHAPES = list(process.env.BENCH_LORA, 'Qwen2.5-0.5B,Qwen2.5-1.5B');
const FAMILY_SHAPES = list(process.env.BENCH_FAMILIES, 'Qwen3-0.6B,Llama-3.2-1B,Gemma-3-1B');

type Result = {
  tokensPerSecond: number;
  stepSeconds: number;
  cpuSecondsPerStep: number;
  peakRssBytes: number;
};

const worker = fileURLToPath(new URL('./trainer-worker.ts', import.meta.url));
const peer = fileURLToPath(new URL('./torch-peer.py', import.meta.url));

function lastJson(output: string): Result {
  return JSON.parse(output.trim().split('\n').at(-1)!) as Result;
}

/** One round of ours in a child process. */
function ours(job: Record<string, unknown>): Result {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', worker, JSON.stringify(job)],
    { encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return lastJson(out);
}

/** One round of ours, or the typed error that refused it (its first line). */
function oursOrRefusal(job: Record<string, unknown>): Result | string {
  try {
    return ours(job);
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? error);
    // the typed error's first line (tfjs-wasm's handler prints its own source line first)
    const lines = stderr.split('\n').filter((l) => !l.includes('WasmBackendModule'));
    const line =
      lines.find((l) => /^\w*Error\b/.test(l.trim()) || /MEMORY_LIMIT/.test(l)) ?? lines[0] ?? '';
    return line.trim().slice(0, 400);
  }
}

/** One round of the PyTorch peer. */
function torch(shape: BenchShape, mode: 'sft' | 'grpo', batch: number, seq: number): Result {
  const c = shape.config;
  const spec = {
    hidden_size: c.hidden_size,
    num_hidden_layers: c.num_hidden_layers,
    num_attention_heads: c.num_attention_heads,
    num_key_value_heads: c.num_key_value_heads,
    intermediate_size: c.intermediate_size,
    vocab_size: c.vocab_size,
    ...(c.head_dim ? { head_dim: c.head_dim } : {}),
    tie_word_embeddings: c.tie_word_embeddings === true,
    qkv_bias: c.model_type === 'qwen2',
    rope_theta: c.rope_theta ?? 10000,
    rms_norm_eps: c.rms_norm_eps ?? 1e-6,
    batch,
    seq,
    steps: STEPS,
    threads: TORCH_THREADS,
    mode,
  };
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(TORCH_THREADS),
    ...(existsSync(OPENBLAS) ? { LD_LIBRARY_PATH: OPENBLAS } : {}),
  };
  const out = execFileSync('/usr/bin/python3', [peer, JSON.stringify(spec)], {
    env,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  return lastJson(out);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
const load = () =>
  (execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0] ?? '?').trim();
const hasTorch = torchAvailable();
const rows: string[] = [];
console.log(`load average at start: ${load()}; rounds ${ROUNDS} × ${STEPS} steps`);
for (const name of SHAPE_NAMES) {
  const shape = SHAPES[name];
  if (!shape)
    throw new Error(`unknown shape ${name} (bench/shapes.ts: ${Object.keys(SHAPES).join(', ')})`);
  for (const mode of MODES) {
    const job = { config: shape.config, mode, batch: shape.batch, seq: shape.seq, steps: STEPS };
    const a: Result[] = [];
    const b: Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // alternate which runs first, so a drift of the machine's speed within a round is shared
      if (round % 2 === 1 && hasTorch) b.push(torch(shape, mode, shape.batch, shape.seq));
      a.push(ours(job));
      if (round % 2 === 0 && hasTorch) b.push(torch(shape, mode, shape.batch, shape.seq));
      const line = (r: Result) =>
        `${r.tokensPerSecond.toFixed(1)} tok/s (${r.cpuSecondsPerStep.toFixed(1)} CPU s/step) ${gib(r.peakRssBytes)} GiB`;
      console.log(
        `${name} ${mode} round ${round + 1}: ours ${line(a.at(-1)!)}` +
          (hasTorch ? `; PyTorch ${line(b.at(-1)!)}` : ''),
      );
    }
    const ourRate = median(a.map((r) => r.tokensPerSecond));
    const ourRss = median(a.map((r) => r.peakRssBytes));
    const ourCpu = median(a.map((r) => r.cpuSecondsPerStep));
    const peerRate = hasTorch ? median(b.map((r) => r.tokensPerSecond)) : Number.NaN;
    const peerRss = hasTorch ? median(b.map((r) => r.peakRssBytes)) : Number.NaN;
    const peerCpu = hasTorch ? median(b.map((r) => r.cpuSecondsPerStep)) : Number.NaN;
    rows.push(
      `| ${name}, ${shape.batch} × ${shape.seq} | ${mode} | ${ourRate.toFixed(1)} | ${gib(ourRss)} | ` +
        (hasTorch
          ? `${peerRate.toFixed(1)} | ${gib(peerRss)} | **${(ourRate / peerRate).toFixed(2)}×** | ${(ourRss / peerRss).toFixed(2)}× | ${(peerCpu / ourCpu).toFixed(2)}× |`
          : 'n/a | n/a | n/a | n/a | n/a |'),
    );
  }
}
const loraRows: string[] = [];
for (const name of LORA_SHAPES) {
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown shape ${name}`);
  // GRPO, LoRA r 16 on every linear layer, 8 × 256 completion tokens after 32 prompt tokens
  const job = {
    config: shape.config,
    mode: 'grpo',
    batch: 8,
    seq: 256,
    prompt: 32,
    steps: 1,
    lora: { r: 16, alpha: 32, targetModules: 'all-linear' },
    // Qwen2.5-0.5B: the acceptance's 4 GiB budget (the trainer plans its micro-batches and
    // checkpointing for it); larger shapes: the machine's memory (the default)
    ...(name === 'Qwen2.5-0.5B' ? { memoryLimitBytes: 4 * 2 ** 30 } : {}),
  };
  const result = ours(job);
  loraRows.push(
    `| ${name} | GRPO, LoRA r 16 all-linear, 8 × (32 + 256)${name === 'Qwen2.5-0.5B' ? ', memoryLimitBytes 4 GiB' : ''} | ${result.stepSeconds.toFixed(1)} s | ${gib(result.peakRssBytes)} GiB |`,
  );
  console.log(loraRows.at(-1));
}
const familyRows: string[] = [];
for (const name of FAMILY_SHAPES) {
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown shape ${name}`);
  const base = { config: shape.config, batch: shape.batch, seq: shape.seq, steps: STEPS };
  const runs: [string, Record<string, unknown>][] = [
    // a 14 GiB budget: the machine is shared, and a shape that does not fit it is refused (typed)
    [
      'SFT, full fine-tuning, 14 GiB budget',
      { ...base, mode: 'sft', memoryLimitBytes: 14 * 2 ** 30 },
    ],
    [
      'GRPO, LoRA r 16 all-linear',
      { ...base, mode: 'grpo', lora: { r: 16, alpha: 32, targetModules: 'all-linear' } },
    ],
  ];
  for (const [label, job] of runs) {
    const result = oursOrRefusal(job);
    familyRows.push(
      typeof result === 'string'
        ? `| ${name}, ${shape.batch} × ${shape.seq} | ${label} | refused before any step: ${result} | |`
        : `| ${name}, ${shape.batch} × ${shape.seq} | ${label} | ${result.tokensPerSecond.toFixed(1)} tok/s (${result.stepSeconds.toFixed(1)} s/step) | ${gib(result.peakRssBytes)} GiB |`,
    );
    console.log(familyRows.at(-1));
  }
}
const peerName = `PyTorch 1.13 + ${existsSync(OPENBLAS) ? 'OpenBLAS' : 'default BLAS'}, ${TORCH_THREADS} threads`;
console.log(
  `\nmedians of ${ROUNDS} alternating rounds × ${STEPS} steps, load average now ${load()}`,
);
console.log(
  `| shape, batch × completion tokens | step | ours tok/s | ours peak RSS GiB | ${peerName} tok/s | its peak RSS GiB | speed | memory | CPU time |`,
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(row);
if (loraRows.length > 0) {
  console.log('\n| shape | step | step time | peak RSS (training process) |');
  console.log('|---|---|---|---|');
  for (const row of loraRows) console.log(row);
}
if (familyRows.length > 0) {
  console.log('\n| family shape, batch × completion tokens | step | ours | peak RSS |');
  console.log('|---|---|---|---|');
  for (const row of familyRows) console.log(row);
}
if (!hasTorch) {
  console.log(
    'PyTorch side-by-side skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch libopenblas0-openmp).',
  );
}
