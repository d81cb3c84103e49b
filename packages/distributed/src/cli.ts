#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { DEFAULT_REDIS_URL } from './redis/connection.js';
import { VERSION } from './version.js';
import { startRolloutWorker } from './worker/rollout-worker.js';
import type { RunningWorker } from './worker/sandboxed-worker.js';
import { startVerifyWorker } from './worker/verify-worker.js';

const USAGE = `rlvr-worker ${VERSION}
Usage: rlvr-worker rollout --checkpoint DIR --weights DIR [common options] [--threads N]
       rlvr-worker verify --rewards FILE [common options]

  rollout: samples completions for createQueueSampler (queue rlvr-rollout)
    --checkpoint DIR     base model checkpoint (the one the trainer starts from)
    --weights DIR        weight folder shared with the trainer (createQueueSampler({ weights }))
    --threads N          ONNX Runtime threads per child process (default 1)
  verify: scores completions for createQueueReward (queue rlvr-verify)
    --rewards FILE       ES module: export default { name: rewardFunction, ... }

  common options:
    --redis URL          Redis server (default $RLVR_REDIS_URL or ${DEFAULT_REDIS_URL})
    --queue NAME         queue name (default rlvr-rollout / rlvr-verify)
    --concurrency N      jobs in flight, one child process each (default 1)
    --lock-duration MS   job lock duration (default 60000)
    --stalled-interval MS  how often to requeue jobs of dead workers (default 30000)
`;

const COMMON = {
  redis: { type: 'string' },
  queue: { type: 'string' },
  concurrency: { type: 'string' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
} as const;

function int(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value);
}

async function start(command: string, args: string[]): Promise<RunningWorker> {
  const options =
    command === 'rollout'
      ? {
          ...COMMON,
          checkpoint: { type: 'string' },
          weights: { type: 'string' },
          threads: { type: 'string' },
        }
      : { ...COMMON, rewards: { type: 'string' } };
  const { values } = parseArgs({ args, strict: true, options: options as typeof COMMON }) as {
    values: Record<string, string | undefined>;
  };
  const common = {
    redis: values.redis ?? process.env.RLVR_REDIS_URL ?? DEFAULT_REDIS_URL,
    ...(values.queue === undefined ? {} : { queue: values.queue }),
    concurrency: int(values.concurrency),
    lockDurationMs: int(values['lock-duration']),
    stalledIntervalMs: int(values['stalled-interval']),
  };
  if (command === 'rollout') {
    return startRolloutWorker({
      ...common,
      checkpoint: values.checkpoint as string,
      weights: values.weights as string,
      threads: int(values.threads),
    });
  }
  return startVerifyWorker({ ...common, rewards: values.rewards as string });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'rollout' && command !== 'verify') {
    process.stderr.write(
      `rlvr-worker: unknown command '${command}' (expected 'rollout' or 'verify')\n${USAGE}`,
    );
    return 2;
  }
  const worker = await start(command, rest);
  worker.on('completed', (job) => process.stdout.write(`completed ${job.id}\n`));
  worker.on('failed', (job, error) =>
    process.stdout.write(`failed ${job.id}: ${(error as Error)?.message ?? String(error)}\n`),
  );
  process.stdout.write(`rlvr-worker: ${command} worker ready on queue '${worker.queue}'\n`);
  const stop = () => {
    void worker.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return -1; // keep running until a signal
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(
      `rlvr-worker: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
