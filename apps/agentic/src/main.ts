import { runAgentic } from './run.js';

const args = process.argv.slice(2);
const unknown = args.filter(
  (arg, index) => !['--quick', '--out'].includes(arg) && args[index - 1] !== '--out',
);
if (unknown.length > 0) {
  console.error(`unknown argument(s): ${unknown.join(' ')} (use --quick and --out <folder>)`);
  process.exitCode = 2;
} else {
  const out = args.includes('--out') ? args[args.indexOf('--out') + 1] : undefined;
  runAgentic({ quick: args.includes('--quick'), outputDir: out ?? 'runs/agentic' }).catch(
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
