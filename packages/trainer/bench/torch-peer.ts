/** The PyTorch peer and the token batch that the trainer benches share. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRng } from '@rlvr/core';
import type { TokenSequence } from '../src/index.js';
import type { BenchConfig } from './configs.js';

/** Sequences per step and completion tokens per sequence of every trainer bench. */
export const BATCH = 16;
export const SEQ = 128;

/** `BATCH` sequences of one prompt token and `SEQ` completion tokens, seeded. */
export function benchBatch(seed: number, vocab: number): TokenSequence[] {
  const rng = createRng(seed);
  return Array.from({ length: BATCH }, () => ({
    promptIds: [Math.floor(rng.next() * vocab)],
    completionIds: Array.from({ length: SEQ }, () => Math.floor(rng.next() * vocab)),
  }));
}

/** True when Debian's `python3-torch` imports. */
export function torchAvailable(): boolean {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Debian's OpenMP OpenBLAS, which the peer runs on when installed. */
export const OPENBLAS = '/usr/lib/x86_64-linux-gnu/openblas-openmp';

/**
 * One round of `torch-llama.py` (same architecture and step: `sft` cross-entropy or `grpo`, TRL's
 * GRPO loss with a reference model) on `threads` threads: tok/s.
 */
export function torchRound(
  spec: BenchConfig,
  steps: number,
  threads: number,
  mode: 'sft' | 'grpo' = 'sft',
): number {
  const script = fileURLToPath(new URL('./torch-llama.py', import.meta.url));
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(threads),
    ...(existsSync(OPENBLAS) ? { LD_LIBRARY_PATH: OPENBLAS } : {}),
  };
  const args = [
    spec.hidden_size,
    spec.num_hidden_layers,
    spec.num_attention_heads,
    spec.intermediate_size,
    spec.vocab_size,
    BATCH,
    SEQ,
    steps,
    threads,
    spec.num_key_value_heads,
    mode,
  ];
  const out = execFileSync('/usr/bin/python3', [script, ...args.map(String)], {
    env,
    encoding: 'utf8',
  });
  return (JSON.parse(out.trim().split('\n').at(-1)!) as { tokensPerSecond: number })
    .tokensPerSecond;
}
