#!/usr/bin/env node
import { runVoteCli } from './cli/run-cli.js';

runVoteCli(process.argv.slice(2), {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`rlvr-vote: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
