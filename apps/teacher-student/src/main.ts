import { resolve } from 'node:path';
import { RlvrError } from '@rlvr/core';
import { configFromArgs, USAGE } from './config.js';
import { runTeacherStudent } from './run.js';
import { summaryTable } from './summary.js';

async function main(): Promise<number> {
  let parsed: ReturnType<typeof configFromArgs>;
  try {
    parsed = configFromArgs(process.argv.slice(2));
  } catch (error) {
    if (RlvrError.isInstance(error)) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (parsed.help) {
    console.log(USAGE);
    return 0;
  }
  const { config } = parsed;
  console.error(
    `rlvr teacher-student${config.quick ? ' (--quick)' : ''}: output in ${resolve(config.outDir)}`,
  );
  const report = await runTeacherStudent({ config, fresh: parsed.fresh });
  console.log(`\n${summaryTable(report)}`);
  console.log(`\nreport: ${resolve(config.outDir, 'report.html')} (+ report.json)`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
