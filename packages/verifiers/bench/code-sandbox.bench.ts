/**
 * Sandbox start-up overhead: median wall time of one `runTests` call with a trivial program and one
 * test, next to a plain interpreter start (`python3 -c pass`, `node -e 0`) of the same binary.
 * Run: `pnpm --filter @rlvr/verifiers bench` (or `npx tsx bench/code-sandbox.bench.ts`).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { runTests } from '../src/code/index.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 21);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function timePlain(file: string, args: string[]): number {
  const samples: number[] = [];
  for (let index = 0; index < RUNS; index++) {
    const started = performance.now();
    const result = spawnSync(file, args, { stdio: 'ignore', env: {} });
    samples.push(performance.now() - started);
    if (result.status !== 0) throw new Error(`${file} ${args.join(' ')} exited ${result.status}`);
  }
  return median(samples);
}

async function timeSandbox(language: 'python' | 'javascript'): Promise<number> {
  const program = language === 'python' ? 'x = 1' : 'const x = 1;';
  const tests = language === 'python' ? ['assert x == 1'] : ['assert.strictEqual(x, 1);'];
  await runTests({ language, program, tests }); // warm-up: runtime discovery and probe
  const samples: number[] = [];
  for (let index = 0; index < RUNS; index++) {
    const started = performance.now();
    const result = await runTests({ language, program, tests });
    samples.push(performance.now() - started);
    if (result.verdict !== 'pass') throw new Error(`sandbox run failed: ${result.reason}`);
  }
  return median(samples);
}

async function main(): Promise<void> {
  if (!['/usr/bin/bwrap', '/bin/bwrap'].some((path) => existsSync(path))) {
    console.log('code-sandbox bench: SKIPPED (bubblewrap is not installed)');
    return;
  }
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const pythonVersion = execFileSync(python, ['--version'], { encoding: 'utf8' }).trim();
  const rows = [
    {
      what: `python (${pythonVersion})`,
      plain: timePlain(python, ['-c', 'pass']),
      sandbox: await timeSandbox('python'),
    },
    {
      what: `javascript (node ${process.version})`,
      plain: timePlain(process.execPath, ['-e', '0']),
      sandbox: await timeSandbox('javascript'),
    },
  ];
  console.log(`code-sandbox start-up, median of ${RUNS} runs (ms):`);
  console.log('language                      plain   sandbox   overhead');
  for (const row of rows) {
    console.log(
      `${row.what.padEnd(28)} ${row.plain.toFixed(1).padStart(6)}  ${row.sandbox.toFixed(1).padStart(8)}  ${(row.sandbox - row.plain).toFixed(1).padStart(9)}`,
    );
  }
}

await main();
