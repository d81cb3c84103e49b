#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { RlvrError } from '@rlvr/core';
import { DEFAULT_REDIS_URL } from './redis/connection.js';
import { VERSION } from './version.js';
import { startRolloutWorker } from './worker/rollout-worker.js';

const USAGE = `rlvr-worker ${VERSION}
Usage: rlvr-worker rollout --checkpoint DIR --weights DIR [--redis URL] [--queue NAME]
                           [--concurrency N] [--threads N] [--lock-duration MS] [--stalled-interval MS]

  --checkpoint DIR       base model checkpoint (the one the trainer starts from)
  --weights DIR          weight folder shared with the trainer (createQueueSampler({ weights }))
  --redis URL            Redis server (default $RLVR_REDIS_URL or ${DEFAULT_REDIS_URL})
  --queue NAME           queue name (default rlvr-rollout)
  --concurrency N        jobs in flight, one child process each (default 1)
  --threads N            ONNX Runtime threads per child (default 1)
  --lock-duration MS     job lock duration (default 60000)
  --stalled-interval MS  how often to requeue jobs of dead workers (default 30000)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'rollout') {
    process.stderr.write(
      `rlvr-worker: unknown command '${command}' (expected 'rollout')\n${USAGE}`,
    );
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    strict: true,
    options: {
      checkpoint: { type: 'string' },
      weights: { type: 'string' },
      redis: { type: 'string' },
      queue: { type: 'string' },
      concurrency: { type: 'string' },
      threads: { type: 'string' },
      'lock-duration': { type: 'string' },
      'stalled-interval': { type: 'string' },
    },
  });
  const number = (value: string | undefined) => (value === undefined ? undefined : Number(value));
  const worker = await startRolloutWorker({
    redis: values.redis ?? process.env.RLVR_REDIS_URL ?? DEFAULT_REDIS_URL,
    checkpoint: values.checkpoint as string,
    weights: values.weights as string,
    ...(values.queue === undefined ? {} : { queue: values.queue }),
    concurrency: number(values.concurrency),
    threads: number(values.threads),
    lockDurationMs: number(values['lock-duration']),
    stalledIntervalMs: number(values['stalled-interval']),
  });
  worker.on('completed', (job) => process.stdout.write(`completed ${job.id}\n`));
  worker.on('failed', (job, error) =>
    process.stdout.write(`failed ${job.id}: ${(error as Error)?.message ?? String(error)}\n`),
  );
  process.stdout.write(`rlvr-worker: ready on queue '${worker.queue}'\n`);
  const stop = () => {
    void worker.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return -1; // keep running
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    const message =
      RlvrError.isInstance(error) || error instanceof Error ? error.message : String(error);
    process.stderr.write(`rlvr-worker: ${message}\n`);
    process.exit(1);
  },
);
