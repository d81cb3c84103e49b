/**
 * Sandbox start-up overhead: median wall time of one `runTests` call with a trivial program and one
 * test, next to a plain interpreter start (`python3 -c pass`, `node -e 0`) of the same binary. The
 * two are interleaved (plain, sandboxed, plain, …) so that load changes on a shared machine hit
 * both columns alike.
 * Run: `pnpm --filter @rlvr/verifiers bench` (or `npx tsx bench/code-sandbox.bench.ts`);
 * `BENCH_RUNS=41` for more samples.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { findOnPath } from '../src/code/host-tools.js';
import { runTests } from '../src/code/index.js';
import { defaultPythonPath } from '../src/code/runtime.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 21);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function timePlain(file: string, args: string[]): number {
  const started = performance.now();
  const result = spawnSync(file, args, { stdio: 'ignore', env: {} });
  const elapsed = performance.now() - started;
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')} exited ${result.status}`);
  return elapsed;
}

async function measure(
  language: 'python' | 'javascript',
  plain: [string, string[]],
): Promise<{ plain: number; sandbox: number }> {
  const program = language === 'python' ? 'x = 1' : 'const x = 1;';
  const tests = language === 'python' ? ['assert x == 1'] : ['assert.strictEqual(x, 1);'];
  await runTests({ language, program, tests }); // warm-up: runtime discovery and probe
  const plainSamples: number[] = [];
  const sandboxSamples: number[] = [];
  for (let index = 0; index < RUNS; index++) {
    plainSamples.push(timePlain(...plain));
    const started = performance.now();
    const result = await runTests({ language, program, tests });
    sandboxSamples.push(performance.now() - started);
    if (result.verdict !== 'pass') throw new Error(`sandbox run failed: ${result.reason}`);
  }
  return { plain: median(plainSamples), sandbox: median(sandboxSamples) };
}

async function main(): Promise<void> {
  if (!findOnPath('bwrap')) {
    console.log('code-sandbox bench: SKIPPED (bubblewrap is not on PATH)');
    return;
  }
  const python = defaultPythonPath(); // what runTests uses
  if (!python) {
    console.log('code-sandbox bench: SKIPPED (no python3 on PATH the sandbox user can reach)');
    return;
  }
  const pythonVersion = execFileSync(python, ['--version'], { encoding: 'utf8' }).trim();
  const rows = [
    {
      what: `python (${pythonVersion})`,
      ...(await measure('python', [python, ['-c', 'pass']])),
    },
    {
      what: `javascript (node ${process.version})`,
      ...(await measure('javascript', [process.execPath, ['-e', '0']])),
    },
  ];
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
  console.log(`code-sandbox start-up, median of ${RUNS} interleaved runs (ms; load ${load}):`);
  console.log('language                      plain   sandbox   overhead');
  for (const row of rows) {
    console.log(
      `${row.what.padEnd(28)} ${row.plain.toFixed(1).padStart(6)}  ${row.sandbox.toFixed(1).padStart(8)}  ${(row.sandbox - row.plain).toFixed(1).padStart(9)}`,
    );
  }
}

await main();
