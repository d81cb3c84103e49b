import {
  hashString,
  InvalidArgumentError,
  type RewardInput,
  stableStringify,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import {
  DEFAULT_VERIFY_QUEUE,
  type VerifyJobData,
  type VerifyJobResult,
  validateQueueName,
  validateRedisUrl,
  verifyJobId,
} from '../protocol.js';
import { DEFAULT_RECONNECT_TIMEOUT_MS, JobClient } from '../queue/job-client.js';

const FUNCTION = 'createQueueReward';

/** Options of {@link createQueueReward}. */
export type QueueRewardOptions = {
  /** Redis URL, e.g. `redis://127.0.0.1:6379`. */
  redis: string;
  /** Name of the reward function in the workers' rewards module (`rlvr-worker verify --rewards`). */
  reward: string;
  /** BullMQ queue name the verifier workers listen on. Default `'rlvr-verify'`. */
  queue?: string;
  /** Attempts per job before it lands in the failed set. Default 3. */
  attempts?: number;
  /** Delay before a failed attempt is retried, in ms (exponential). Default 1000. */
  backoffMs?: number;
  /**
   * How long a call waits for a lost Redis to come back, in ms, before it rejects with
   * `QueueUnavailableError` (0: at once); then the missing jobs are added again. Default 30000.
   */
  reconnectTimeoutMs?: number;
};

/** A reward function (a core `RewardFunction`) scored by verifier workers; `close()` disconnects it. */
export type QueueReward = {
  (input: RewardInput): Promise<number | null>;
  close(): Promise<void>;
};

const REWARD_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Creates a core {@link RewardFunction} whose scores come from `rlvr-worker verify` processes:
 * one BullMQ job per call with the idempotent id `r-{reward}-{hash of the input}`, so the same
 * completion is scored once even when scored twice or retried after a worker crash. Use it as any
 * reward: `rewards: [{ name: 'code', fn: await createQueueReward({ redis, reward: 'code' }) }]`.
 * A job that fails every attempt rejects with {@link QueueJobFailedError}.
 * @throws {InvalidArgumentError} for bad options; {@link QueueUnavailableError} when Redis is
 * unreachable or its `maxmemory-policy` is not `noeviction`.
 */
export async function createQueueReward(options: QueueRewardOptions): Promise<QueueReward> {
  const raw = validateOptions<QueueRewardOptions>(options, {
    parameter: 'options',
    functionName: FUNCTION,
    known: ['redis', 'reward', 'queue', 'attempts', 'backoffMs', 'reconnectTimeoutMs'],
  });
  const url = validateRedisUrl(raw.redis, 'options.redis', FUNCTION);
  if (typeof raw.reward !== 'string' || !REWARD_NAME.test(raw.reward)) {
    throw new InvalidArgumentError({
      parameter: 'options.reward',
      functionName: FUNCTION,
      value: raw.reward,
      expected: 'a reward name of 1-64 letters, digits, "_" or "-"',
    });
  }
  const reward = raw.reward;
  const queue = validateQueueName(raw.queue ?? DEFAULT_VERIFY_QUEUE, 'options.queue', FUNCTION);
  const attempts = validateInteger(raw.attempts ?? 3, {
    parameter: 'options.attempts',
    functionName: FUNCTION,
    min: 1,
    max: 100,
  });
  const backoffMs = validateInteger(raw.backoffMs ?? 1000, {
    parameter: 'options.backoffMs',
    functionName: FUNCTION,
    min: 0,
  });
  const reconnectTimeoutMs = validateInteger(
    raw.reconnectTimeoutMs ?? DEFAULT_RECONNECT_TIMEOUT_MS,
    { parameter: 'options.reconnectTimeoutMs', functionName: FUNCTION, min: 0 },
  );
  const client = await JobClient.open<VerifyJobData, VerifyJobResult>(url, queue, {
    attempts,
    backoffMs,
    reconnectTimeoutMs,
  });
  const score = async (input: RewardInput): Promise<number | null> => {
    // plain data only (what survives JSON), so that the id is the hash of what the worker sees
    const data: VerifyJobData = { reward, input: JSON.parse(JSON.stringify(input)) as RewardInput };
    const id = verifyJobId(reward, hashString(stableStringify(data.input)));
    const [result] = await client.run([{ id, data }], undefined, `QueueReward(${reward})`);
    return result!.value;
  };
  return Object.assign(score, { close: () => client.close() });
}
