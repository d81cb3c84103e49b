import { validateOptions } from '@rlvr/core';
import { DEFAULT_VERIFY_QUEUE, validateQueueName, validateRedisUrl } from '../protocol.js';
import {
  pathOption,
  processorFile,
  type RunningWorker,
  startSandboxedWorker,
  TUNING_KEYS,
  type WorkerTuning,
} from './sandboxed-worker.js';
import { WORKER_ENV } from './worker-env.js';

const FUNCTION = 'startVerifyWorker';

/** Options of {@link startVerifyWorker} (the `rlvr-worker verify` flags). */
export type VerifyWorkerOptions = WorkerTuning & {
  /** Redis URL shared with the trainer. */
  redis: string;
  /**
   * An ES module whose default export maps reward names to reward functions (or is a function,
   * possibly async, returning that map), e.g. `export default { math: mathReward() }`.
   */
  rewards: string;
  /** Queue name. Default `'rlvr-verify'`. */
  queue?: string;
};

/**
 * Starts a BullMQ worker that scores reward jobs ({@link createQueueReward}) with the reward
 * functions of `options.rewards`, in sandboxed child processes.
 * @throws {QueueUnavailableError} when Redis is unreachable or may evict jobs.
 */
export async function startVerifyWorker(options: VerifyWorkerOptions): Promise<RunningWorker> {
  const raw = validateOptions<VerifyWorkerOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: ['redis', 'rewards', 'queue', ...TUNING_KEYS],
  });
  const url = validateRedisUrl(raw.redis, 'options.redis', FUNCTION);
  const rewards = pathOption(raw.rewards, 'options.rewards', FUNCTION, 'a path to an ES module');
  const queue = validateQueueName(raw.queue ?? DEFAULT_VERIFY_QUEUE, 'options.queue', FUNCTION);
  return startSandboxedWorker({
    url,
    queue,
    processor: processorFile('verify-processor'),
    env: { [WORKER_ENV.rewards]: rewards },
    tuning: raw,
    functionName: FUNCTION,
  });
}
