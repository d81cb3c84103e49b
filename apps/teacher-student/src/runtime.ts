import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import { type SelectedBackend, selectBackend } from '@rlvr/trainer';

/** What the run trains and samples with. */
export type Runtime = {
  device: 'cpu' | 'cuda';
  backend: SelectedBackend;
  workers: number;
  threads: number;
};

/**
 * Selects the tfjs backend for training (`cuda`: tfjs-node-gpu first; `cpu`: wasm, then the pure-JS
 * cpu backend) and records the rollout settings. Throws `UNAVAILABLE` when none loads.
 */
export async function createRuntime(options: {
  device: 'cpu' | 'cuda';
  workers: number;
  threads: number;
}): Promise<Runtime> {
  const backend = await selectBackend({
    candidates: options.device === 'cuda' ? ['tensorflow', 'wasm', 'cpu'] : ['wasm', 'cpu'],
  });
  return {
    device: options.device,
    backend,
    workers: options.workers,
    threads: options.threads,
  };
}

/** An ONNX Runtime sampler (@rlvr/rollout) for a checkpoint on the run's device, engine of its choosing. */
export function createSampler(runtime: Runtime, checkpoint: Checkpoint): Promise<OnnxSampler> {
  return createOnnxSampler({
    checkpoint,
    workers: runtime.workers,
    threads: runtime.threads,
    executionProviders: runtime.device === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
    // No `engine`: @rlvr/rollout picks the faster one for the model.
  });
}
