#!/usr/bin/env node
import { runCli } from './run-cli.js';

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
// Worker threads and wasm runtimes can keep the event loop alive: exit explicitly.
process.exitCode = code;
setTimeout(() => process.exit(code), 50).unref();
