// BullMQ sandboxed processor: runs in a child process forked by `rlvr-worker rollout`, so ONNX
// inference never blocks the parent's event loop (which renews the job locks).
import { type NamedTensor, RlvrError } from '@rlvr/core';
import { type Checkpoint, loadCheckpoint, parseSafetensors } from '@rlvr/model';
import { createOnnxSampler, type OnnxSampler } from '@rlvr/rollout';
import { type Job, UnrecoverableError } from 'bullmq';
import type { RolloutJobData, VersionedCompletion } from '../protocol.js';
import { runRolloutJob } from '../sampler/run-job.js';
import { createLocalWeightStore } from '../weights/weight-store.js';
import { WORKER_ENV } from './worker-env.js';

/** `loaded`: the digest held (`'base'`, or `'loading'` mid-swap); `version`: its policy version. */
type State = { base: Checkpoint; sampler: OnnxSampler; loaded: string; version: number };
let state: Promise<State> | undefined;

async function init(): Promise<State> {
  const base = await loadCheckpoint(process.env[WORKER_ENV.checkpoint]!);
  const threads = Number(process.env[WORKER_ENV.threads] ?? '1');
  const sampler = await createOnnxSampler({ checkpoint: base, workers: 0, threads });
  return { base, sampler, loaded: 'base', version: 0 };
}

/**
 * Brings the sampler to the weights a job names (the base checkpoint, or a stored version), or
 * keeps the ones it holds when the job accepts them (`oldestVersion ≤ held ≤ policyVersion`).
 */
async function loadVersion(current: State, data: RolloutJobData): Promise<void> {
  const wanted = data.weights ?? 'base';
  if (current.loaded === wanted) return;
  const accepted =
    data.oldestVersion !== undefined &&
    current.loaded !== 'loading' &&
    current.version >= data.oldestVersion &&
    current.version <= data.policyVersion;
  if (accepted) return;
  let tensors: NamedTensor[] = current.base.tensors;
  if (data.weights !== null) {
    const store = createLocalWeightStore(process.env[WORKER_ENV.weights]!);
    const stored = parseSafetensors(await store.get(data.weights)).tensors;
    const byName = new Map(stored.map((tensor) => [tensor.name, tensor]));
    // every tensor from the base, replaced by the version's: the result never depends on the
    // versions this process loaded before
    tensors = current.base.tensors.map((tensor) => byName.get(tensor.name) ?? tensor);
  }
  current.loaded = 'loading';
  await current.sampler.updateWeights({ step: data.policyVersion, tensors });
  current.loaded = wanted;
  current.version = data.policyVersion;
}

/**
 * Samples one job. Each completion reports the policy version that sampled it
 * ({@link VersionedCompletion}`.policyVersion`): the job's, or an older one it accepted.
 */
export default async function processRollout(
  job: Job<RolloutJobData>,
): Promise<VersionedCompletion[]> {
  state ??= init();
  const current = await state;
  try {
    await loadVersion(current, job.data);
    const policyVersion = current.version;
    const completions = await runRolloutJob(current.sampler, job.data);
    return completions.map((completion) => ({ ...completion, policyVersion }));
  } catch (error) {
    // a bad request or bad weights fail the same way on every attempt: do not retry them
    if (
      RlvrError.isInstance(error) &&
      ['INVALID_ARGUMENT', 'SHAPE_MISMATCH'].includes(error.code)
    ) {
      throw new UnrecoverableError(`${error.name}: ${error.message}`);
    }
    throw error;
  }
}
