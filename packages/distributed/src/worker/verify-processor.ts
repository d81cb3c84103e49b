// BullMQ sandboxed processor of `rlvr-worker verify`: scores one completion with a named reward
// function from the user's rewards module, in a child process (bwrap launches, tfjs or a slow
// checker never block the parent's lock renewal).
import { pathToFileURL } from 'node:url';
import type { RewardFunction } from '@rlvr/core';
import { type Job, UnrecoverableError } from 'bullmq';
import type { VerifyJobData, VerifyJobResult } from '../protocol.js';
import { WORKER_ENV } from './worker-env.js';

let rewards: Promise<Record<string, RewardFunction>> | undefined;

async function loadRewards(): Promise<Record<string, RewardFunction>> {
  const file = process.env[WORKER_ENV.rewards]!;
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
  let value = module.default;
  if (typeof value === 'function') value = await (value as () => unknown)();
  if (value === null || typeof value !== 'object') {
    throw new UnrecoverableError(
      `${file} must export default an object of reward functions ({ name: fn }) or a function returning one`,
    );
  }
  return value as Record<string, RewardFunction>;
}

export default async function processVerify(job: Job<VerifyJobData>): Promise<VerifyJobResult> {
  rewards ??= loadRewards();
  const table = await rewards;
  const fn = table[job.data.reward];
  if (typeof fn !== 'function') {
    throw new UnrecoverableError(
      `unknown reward '${job.data.reward}' (this worker's rewards module has: ${Object.keys(table).join(', ') || 'none'})`,
    );
  }
  const value = await fn(job.data.input);
  if (value !== null && (typeof value !== 'number' || !Number.isFinite(value))) {
    throw new UnrecoverableError(
      `reward '${job.data.reward}' returned ${String(value)}; expected a finite number or null`,
    );
  }
  return { value };
}
