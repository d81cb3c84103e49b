import '@tensorflow/tfjs-core/dist/register_all_gradients';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HAS_REDIS_SERVER,
  type RedisServer,
  redisServer,
  saveTinyCheckpoint,
  spawnWorker,
  type WorkerProcess,
} from '../src/testing/test-env.js';
import { trainOnWorkers } from './train-on-workers.js';

const README = new URL('../README.md', import.meta.url);
const EXAMPLE = new URL('./train-on-workers.ts', import.meta.url);
const REWARDS = new URL('./rewards.mjs', import.meta.url);

let root: string;
let redis: RedisServer;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'rlvr-example-workers-'));
  // its own Redis: the example uses the default queue names
  redis = await redisServer();
  await redis.start();
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await redis?.kill();
  await rm(root, { recursive: true, force: true });
});

/** The README's block of `language` in the section titled `heading`. */
async function readmeBlock(heading: string, language: string): Promise<string | undefined> {
  const readme = await readFile(README, 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  return new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section)?.[1];
}

describe.skipIf(!HAS_REDIS_SERVER)(
  'examples/train-on-workers.ts and examples/rewards.mjs (the README examples)',
  () => {
    it('trains 2 asynchronous steps on a rollout and a verifier worker process', async () => {
      const checkpointDir = join(root, 'model');
      await saveTinyCheckpoint(checkpointDir);
      const weights = join(root, 'weights');
      const dataset = join(root, 'math.jsonl');
      const records = Array.from({ length: 8 }, (_, index) =>
        JSON.stringify({ id: `q${index}`, prompt: `${index % 4}+${index % 3}=`, answer: '1' }),
      );
      await writeFile(dataset, `${records.join('\n')}\n`);
      const redisArgs = ['--redis', redis.url];
      workers.push(
        ...(await Promise.all([
          spawnWorker([...redisArgs, '--checkpoint', checkpointDir, '--weights', weights]),
          spawnWorker([...redisArgs, '--rewards', fileURLToPath(REWARDS)], 'verify'),
        ])),
      );
      const outputDir = join(root, 'run');
      const options = { redis: redis.url, weights, checkpointDir, dataset, outputDir };
      const result = await trainOnWorkers({ ...options, maxSteps: 2, maxNewTokens: 4 });
      expect(result.steps).toBe(2);
      const lines = (await readFile(join(outputDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
      const metrics = lines.map((line) => JSON.parse(line).metrics as Record<string, number>);
      expect(metrics.map((values) => values['async/staleness_max'])).toEqual([0, 1]);
      expect(workers[0]!.output()).toContain('completed v0-');
      expect(workers[1]!.output()).toContain('completed r-exact-');
      // run again with a higher maxSteps: it continues from the checkpoint
      const more = await trainOnWorkers({ ...options, maxSteps: 3, maxNewTokens: 4 });
      expect(more.steps).toBe(3);
    });

    it("should be exactly the README's code blocks", async () => {
      expect(await readmeBlock('## 3. Point the trainer at them', 'ts')).toBe(
        await readFile(EXAMPLE, 'utf8'),
      );
      expect(await readmeBlock('## 2. Start workers', 'js')).toBe(await readFile(REWARDS, 'utf8'));
    });
  },
);
