import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { selectBackend } from '@rlvr/trainer';
import { type CalculatorDemoResult, runCalculatorDemo } from './calculator-demo.js';
import { type HackingClaimResult, runHackingClaim } from './hacking-claim.js';
import { renderReport } from './report.js';
import { FULL, QUICK } from './sizes.js';

/** What {@link runAgentic} wrote. */
export type AgenticRun = {
  quick: boolean;
  calculator: CalculatorDemoResult;
  hacking: HackingClaimResult;
  timeMs: number;
  files: { report: string; json: string };
};

/** Runs both claims (full size, or `quick`) and writes `report.md` and `report.json` to `outputDir`. */
export async function runAgentic(options: {
  quick: boolean;
  outputDir: string;
  log?: (line: string) => void;
}): Promise<AgenticRun> {
  const started = performance.now();
  const log = options.log ?? ((line: string) => console.log(line));
  await selectBackend();
  const sizes = options.quick ? QUICK : FULL;
  const calculator = await runCalculatorDemo(sizes.calculator, log);
  const hacking = await runHackingClaim(sizes.hacking, log);
  const timeMs = performance.now() - started;
  await mkdir(options.outputDir, { recursive: true });
  const files = {
    report: join(options.outputDir, 'report.md'),
    json: join(options.outputDir, 'report.json'),
  };
  const run = { quick: options.quick, calculator, hacking, timeMs };
  await writeFile(files.report, renderReport(run));
  await writeFile(files.json, `${JSON.stringify(run, null, 2)}\n`);
  log(`report: ${files.report} (${(timeMs / 1000).toFixed(1)} s)`);
  return { ...run, files };
}
