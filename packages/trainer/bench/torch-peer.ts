/** What the trainer benches share: the PyTorch peer's presence, its BLAS, the tfjs benches' batch. */
import { execFileSync } from 'node:child_process';
import { createRng } from '@rlvr/core';
import type { TokenSequence } from '../src/index.js';

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
